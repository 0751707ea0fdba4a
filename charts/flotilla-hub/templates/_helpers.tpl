{{/* Name of the chart, the app.kubernetes.io/name label. */}}
{{- define "flotilla-hub.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Chart name and version, the helm.sh/chart label. */}}
{{- define "flotilla-hub.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels the Deployment's selector matches; they never change after install. */}}
{{- define "flotilla-hub.selectorLabels" -}}
app.kubernetes.io/name: {{ include "flotilla-hub.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: hub
{{- end }}

{{/* Labels of every object of the chart. */}}
{{- define "flotilla-hub.labels" -}}
helm.sh/chart: {{ include "flotilla-hub.chart" . }}
{{ include "flotilla-hub.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The image: <registry>/<repository>:<tag>, or @<digest> when the tag is one. */}}
{{- define "flotilla-hub.image" -}}
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

{{/* "true" when the hub runs with --leader-elect: leaderElection.enabled, else replicas > 1. */}}
{{- define "flotilla-hub.leaderElect" -}}
{{- $enabled := .Values.leaderElection.enabled }}
{{- if kindIs "invalid" $enabled }}
{{- $enabled = gt (int .Values.replicas) 1 }}
{{- end }}
{{- ternary "true" "false" $enabled }}
{{- end }}

{{/* One value of .Values.flags as its command-line form: lists comma-joined, maps
(feature-gates) as Name=value sorted by name, whole numbers without an exponent. */}}
{{- define "flotilla-hub.flagValue" -}}
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

{{/* The args of .Values.flags, one "- --name=value" line each, empty values left out;
topology Single sets the components' featureGates over flags.feature-gates. */}}
{{- define "flotilla-hub.flagArgs" -}}
{{- /* set, not merge: merge would take a false gate for unset. */}}
{{- $gates := deepCopy (index .Values.flags "feature-gates" | default dict) }}
{{- range $c := include "flotilla-hub.componentNames" . | splitList " " }}
{{- range $k, $on := (index $.Values.components $c).featureGates }}{{ $_ := set $gates $k $on }}{{ end }}
{{- end }}
{{- $flags := .Values.flags }}
{{- if $gates }}
{{- $flags = set (deepCopy .Values.flags) "feature-gates" $gates }}
{{- end }}
{{- include "flotilla-hub.flagArgsOf" $flags }}
{{- end }}

{{/* The args of a map of flags, one "- --name=value" line each, empty values left out. */}}
{{- define "flotilla-hub.flagArgsOf" -}}
{{- range $name, $value := . }}
{{- if not (or (kindIs "invalid" $value) (and (kindIs "string" $value) (eq $value "")) (and (or (kindIs "slice" $value) (kindIs "map" $value)) (empty $value))) }}
- {{ printf "--%s=%s" $name (include "flotilla-hub.flagValue" $value) | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The built-in add-ons of .Values.addons, as --addons takes them (comma-separated, in the
hub's order); cluster-gateway needs the other two.
*/}}
{{- define "flotilla-hub.addons" -}}
{{- $a := list -}}
{{- if .Values.addons.clusterProxy.enabled }}{{ $a = append $a "cluster-proxy" }}{{ end -}}
{{- if .Values.addons.managedServiceAccount.enabled }}{{ $a = append $a "managed-serviceaccount" }}{{ end -}}
{{- if .Values.addons.clusterGateway.enabled -}}
{{- if not (and .Values.addons.clusterProxy.enabled .Values.addons.managedServiceAccount.enabled) -}}
{{- fail "addons.clusterGateway.enabled needs addons.clusterProxy.enabled and addons.managedServiceAccount.enabled" -}}
{{- end -}}
{{- $a = append $a "cluster-gateway" -}}
{{- end -}}
{{- join "," $a -}}
{{- end -}}

{{/* The ProxyService frontend's port: addons.clusterProxy.frontendPort with cluster-proxy
served, else "" (off). */}}
{{- define "flotilla-hub.proxyFrontendPort" -}}
{{- if and .Values.addons.clusterProxy.enabled (gt (int .Values.addons.clusterProxy.frontendPort) 0) -}}
{{- int .Values.addons.clusterProxy.frontendPort -}}
{{- end -}}
{{- end -}}

{{/* The hub components in OCM's order (hub --components). */}}
{{- define "flotilla-hub.componentNames" -}}
registration-controller registration-webhook work-webhook work-controller placement-controller addon-manager
{{- end -}}

{{/* "true" when the chart renders the single-Deployment hub (render components, topology Single). */}}
{{- define "flotilla-hub.single" -}}
{{- ternary "true" "false" (and (eq .Values.render "components") (eq .Values.topology "Single")) -}}
{{- end -}}

{{/* "true" when the chart renders the split hub (render components, topology Split). */}}
{{- define "flotilla-hub.split" -}}
{{- ternary "true" "false" (and (eq .Values.render "components") (eq .Values.topology "Split")) -}}
{{- end -}}

{{/* The resources of every hub container as YAML, "" for none: resourceRequirement.type
Default takes resources, BestEffort none, ResourceRequirement resourceRequirement.resourceRequirements. */}}
{{- define "flotilla-hub.resources" -}}
{{- $t := .Values.resourceRequirement.type | default "Default" -}}
{{- if eq $t "Default" -}}
{{- with .Values.resources }}{{ toYaml . }}{{ end -}}
{{- else if eq $t "ResourceRequirement" -}}
{{- with .Values.resourceRequirement.resourceRequirements }}{{ toYaml . }}{{ end -}}
{{- end -}}
{{- end -}}

{{/*
The split hub's components as a list of dicts: name (hub --components), deployment (OCM's
Deployment name), sa (OCM's ServiceAccount), webhook (the webhook configuration, Secret and
Service name; "" without webhooks) and controller (runs reconcilers: leader election).
Call with the root context.
*/}}
{{- define "flotilla-hub.splitComponents" -}}
{{- $cm := .Values.clusterManager.name -}}
{{- $out := list -}}
{{- range $c := include "flotilla-hub.componentNames" . | splitList " " -}}
{{- $d := printf "%s-%s" $cm $c -}}
{{- $sa := printf "%s-sa" $c -}}
{{- $webhook := "" -}}
{{- $controller := true -}}
{{- if eq $c "addon-manager" -}}
{{- $d = printf "%s-addon-manager-controller" $cm -}}
{{- $sa = "addon-manager-controller-sa" -}}
{{- $webhook = printf "%s-addon-webhook" $cm -}}
{{- else if or (eq $c "registration-webhook") (eq $c "work-webhook") -}}
{{- $webhook = $d -}}
{{- $controller = false -}}
{{- end -}}
{{- $out = append $out (dict "name" $c "deployment" $d "sa" $sa "webhook" $webhook "controller" $controller) -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/* Labels of a split component's objects (call with dict "root" . "c" <component>). */}}
{{- define "flotilla-hub.componentSelectorLabels" -}}
app.kubernetes.io/name: {{ include "flotilla-hub.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .c }}
{{- end }}

{{- define "flotilla-hub.componentLabels" -}}
helm.sh/chart: {{ include "flotilla-hub.chart" .root }}
{{ include "flotilla-hub.componentSelectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
{{- end }}
