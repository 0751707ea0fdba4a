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

{{/* The args of .Values.flags, one "- --name=value" line each, empty values left out. */}}
{{- define "flotilla-klusterlet.flagArgs" -}}
{{- range $name, $value := .Values.flags }}
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
open-cluster-management- prefix and at most 57 characters. */}}
{{- define "flotilla-klusterlet.agentNamespace" -}}
{{- if or (not (regexMatch "^open-cluster-management-[-a-z0-9]*[a-z0-9]$" .Release.Namespace)) (gt (len .Release.Namespace) 57) }}
{{- fail (printf "the release namespace %q is the klusterlet's agent namespace: it must start with open-cluster-management- and have at most 57 characters (e.g. open-cluster-management-agent)" .Release.Namespace) }}
{{- end }}
{{- .Release.Namespace }}
{{- end }}
