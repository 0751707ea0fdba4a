{{/* Name of the chart, the app.kubernetes.io/name label. */}}
{{- define "flotilla-klusterlet.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Chart name and version, the helm.sh/chart label. */}}
{{- define "flotilla-klusterlet.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels the Deployment's selector matches; they never change after install. */}}
{{- define "flotilla-klusterlet.selectorLabels" -}}
app.kubernetes.io/name: {{ include "flotilla-klusterlet.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: klusterlet
{{- end }}

{{/* Labels of every object of the chart. */}}
{{- define "flotilla-klusterlet.labels" -}}
helm.sh/chart: {{ include "flotilla-klusterlet.chart" . }}
{{ include "flotilla-klusterlet.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The image: <registry>/<repository>:<tag>, or @<digest> when the tag is one. */}}
{{- define "flotilla-klusterlet.image" -}}
{{- $repo := .Values.image.repository }}
{{- if .Values.image.registry }}
{{- $repo = printf "%s/%s" (trimSuffix "/" .Values.image.registry) $repo }}
{{- end }}
{{- $tag := .Values.image.tag | default .Chart.AppVersion }}
{{- if hasPrefix "sha256:" $tag }}
{{- printf "%s@%s" $repo $tag }}
{{- else }}
{{- printf "%s:%s" $repo $tag }}
{{- end }}
{{- end }}

{{/* "true" when the agent runs with --leader-elect: leaderElection.enabled, else replicas > 1. */}}
{{- define "flotilla-klusterlet.leaderElect" -}}
{{- $enabled := .Values.leaderElection.enabled }}
{{- if kindIs "invalid" $enabled }}
{{- $enabled = gt (int .Values.replicas) 1 }}
{{- end }}
{{- ternary "true" "false" $enabled }}
{{- end }}

{{/* One value of .Values.flags as its command-line form: lists comma-joined, maps
(feature-gates) as Name=value sorted by name, whole numbers without an exponent. */}}
{{- define "flotilla-klusterlet.flagValue" -}}
{{- if kindIs "slice" . }}
{{- join "," . }}
{{- else if kindIs "map" . }}
{{- $pairs := list }}
{{- range $k, $v := . }}
{{- $pairs = append $pairs (printf "%s=%v" $k $v) }}
{{- end }}
{{- join "," $pairs }}
{{- else if or (kindIs "float64" .) (kindIs "float32" .) }}
{{- if eq (float64 .) (float64 (int64 .)) }}{{ int64 . }}{{ else }}{{ . }}{{ end }}
{{- else }}
{{- . }}
{{- end }}
{{- end }}

{{/* The args of a flags map (name: value), one "- --name=value" line each, empty values left out. */}}
{{- define "flotilla-klusterlet.flagArgs" -}}
{{- range $name, $value := . }}
{{- if not (or (kindIs "invalid" $value) (and (kindIs "string" $value) (eq $value "")) (and (or (kindIs "slice" $value) (kindIs "map" $value)) (empty $value))) }}
- {{ printf "--%s=%s" $name (include "flotilla-klusterlet.flagValue" $value) | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* The cluster name, failing rendering clearly when it is missing. */}}
{{- define "flotilla-klusterlet.clusterName" -}}
{{- required "clusterName is required: the name this cluster registers under on the hub (e.g. --set clusterName=cluster1)" .Values.clusterName }}
{{- end }}

{{/* The release namespace, which is the agent namespace; OCM's Klusterlet API requires the
open-cluster-management- prefix and at most 57 characters. In the Hosted modes it is the
Klusterlet's name, as OCM's. */}}
{{- define "flotilla-klusterlet.agentNamespace" -}}
{{- if eq (include "flotilla-klusterlet.hosted" .) "true" }}
{{- if ne .Release.Namespace .Values.klusterlet.name }}
{{- fail (printf "in the %s mode the agent namespace is the Klusterlet's name: render into namespace %q, not %q" (include "flotilla-klusterlet.mode" .) .Values.klusterlet.name .Release.Namespace) }}
{{- end }}
{{- else if or (not (regexMatch "^open-cluster-management-[-a-z0-9]*[a-z0-9]$" .Release.Namespace)) (gt (len .Release.Namespace) 57) }}
{{- fail (printf "the release namespace %q is the klusterlet's agent namespace: it must start with open-cluster-management- and have at most 57 characters (e.g. open-cluster-management-agent)" .Release.Namespace) }}
{{- end }}
{{- .Release.Namespace }}
{{- end }}

{{/* The deploy mode: klusterlet.spec.deployOption.mode, Singleton when unset. */}}
{{- define "flotilla-klusterlet.mode" -}}
{{- dig "deployOption" "mode" "" .Values.klusterlet.spec | default "Singleton" }}
{{- end }}

{{/* "true" in the modes whose agents run on a management cluster (Hosted, SingletonHosted). */}}
{{- define "flotilla-klusterlet.hosted" -}}
{{- ternary "true" "false" (has (include "flotilla-klusterlet.mode" .) (list "Hosted" "SingletonHosted")) }}
{{- end }}

{{/* "true" in the modes with one agent Deployment (Singleton, SingletonHosted). */}}
{{- define "flotilla-klusterlet.singleton" -}}
{{- ternary "true" "false" (has (include "flotilla-klusterlet.mode" .) (list "Singleton" "SingletonHosted")) }}
{{- end }}

{{/* The klusterlet namespace on the managed cluster in the Hosted modes (spec.namespace). */}}
{{- define "flotilla-klusterlet.managedNamespace" -}}
{{- .Values.klusterlet.managedNamespace | default "open-cluster-management-agent" }}
{{- end }}

{{/* The labels of an object on the managed cluster: in the Hosted modes the operator applies
it there, through the external-managed-kubeconfig Secret. */}}
{{- define "flotilla-klusterlet.managedLabels" -}}
{{ include "flotilla-klusterlet.labels" . }}
{{- if eq (include "flotilla-klusterlet.hosted" .) "true" }}
flotilla.dev/target: managed
{{- end }}
{{- end }}

{{/* The labels of an object on the management cluster, where the agents run. */}}
{{- define "flotilla-klusterlet.managementLabels" -}}
{{ include "flotilla-klusterlet.labels" . }}
{{- if eq (include "flotilla-klusterlet.hosted" .) "true" }}
flotilla.dev/target: management
{{- end }}
{{- end }}

{{/* The registration identity's ServiceAccount: <name>-agent with one agent Deployment,
OCM's <name>-registration-sa with two. */}}
{{- define "flotilla-klusterlet.agentServiceAccount" -}}
{{- if eq (include "flotilla-klusterlet.singleton" .) "true" }}
{{- printf "%s-agent" .Values.klusterlet.name }}
{{- else }}
{{- printf "%s-registration-sa" .Values.klusterlet.name }}
{{- end }}
{{- end }}

{{/* The namespace of the ServiceAccounts the cluster-wide roles bind: the klusterlet namespace
on the managed cluster in the Hosted modes, else the agent namespace. */}}
{{- define "flotilla-klusterlet.identityNamespace" -}}
{{- if eq (include "flotilla-klusterlet.hosted" .) "true" }}
{{- include "flotilla-klusterlet.managedNamespace" . }}
{{- else }}
{{- .Release.Namespace }}
{{- end }}
{{- end }}

{{/* base (a flags map) with over set on top, key by key (maps such as feature-gates merged
key by key), as JSON: a value false or 0 in over wins, which sprig's merge would drop. */}}
{{- define "flotilla-klusterlet.overlay" -}}
{{- $base := deepCopy (index . 0) }}
{{- range $k, $v := index . 1 }}
{{- $cur := get $base $k }}
{{- if and (kindIs "map" $v) (kindIs "map" $cur) }}
{{- $m := deepCopy $cur }}
{{- range $mk, $mv := $v }}
{{- $_ := set $m $mk $mv }}
{{- end }}
{{- $_ := set $base $k $m }}
{{- else }}
{{- $_ := set $base $k $v }}
{{- end }}
{{- end }}
{{- toJson $base }}
{{- end }}

{{/* The image of an agent: images.<agent> when set, else the chart's image. */}}
{{- define "flotilla-klusterlet.agentImage" -}}
{{- $root := index . 0 }}
{{- index $root.Values.images (index . 1) | default (include "flotilla-klusterlet.image" $root) }}
{{- end }}
