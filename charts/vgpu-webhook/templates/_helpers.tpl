{{/* The chart name, cut to 63 characters. */}}
{{- define "vgpu-webhook.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The object name prefix: the release name when it already holds the chart
name, otherwise "release-chart"; 63 characters at most (a DNS label, as a
Service name must be).
*/}}
{{- define "vgpu-webhook.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "vgpu-webhook.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "vgpu-webhook.selectorLabels" -}}
app.kubernetes.io/name: {{ include "vgpu-webhook.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "vgpu-webhook.labels" -}}
helm.sh/chart: {{ include "vgpu-webhook.chart" . }}
{{ include "vgpu-webhook.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: admission-webhook
{{- end -}}

{{- define "vgpu-webhook.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "vgpu-webhook.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "vgpu-webhook.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* The Secret that holds tls.crt and tls.key for the server. */}}
{{- define "vgpu-webhook.tlsSecretName" -}}
{{- if eq .Values.certificates.mode "existingSecret" -}}
{{- .Values.certificates.existingSecret.name -}}
{{- else -}}
{{- printf "%s-tls" (include "vgpu-webhook.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* The Service's DNS names, shortest first, as a JSON list. */}}
{{- define "vgpu-webhook.dnsNames" -}}
{{- $svc := include "vgpu-webhook.fullname" . -}}
{{- $ns := .Release.Namespace -}}
{{- list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.%s" $svc $ns .Values.certificates.clusterDomain) | toJson -}}
{{- end -}}

{{/*
Every resource name of every configured device family, as a JSON list of
strings: what the matchConditions expression looks for.
*/}}
{{- define "vgpu-webhook.resourceNames" -}}
{{- $names := list -}}
{{- range $d := .Values.config.devices -}}
{{- range $key := list "resourceCountName" "resourceMemoryName" "resourceMemoryPercentageName" "resourceCoreName" "resourcePriorityName" -}}
{{- $v := index $d $key | default "" -}}
{{- if $v -}}
{{- $names = append $names $v -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $names | uniq | toJson -}}
{{- end -}}

{{/*
The CEL expression of the matchConditions: true when a container or an init
container names one of the family resources in its limits or requests.
*/}}
{{- define "vgpu-webhook.gpuPodExpression" -}}
{{- $names := include "vgpu-webhook.resourceNames" . -}}
{{- $container := printf "has(c.resources) && ((has(c.resources.limits) && c.resources.limits.exists(k, k in %s)) || (has(c.resources.requests) && c.resources.requests.exists(k, k in %s)))" $names $names -}}
{{- printf "object.spec.containers.exists(c, %s) || (has(object.spec.initContainers) && object.spec.initContainers.exists(c, %s))" $container $container -}}
{{- end -}}

{{/* Refuses values that cannot work together. */}}
{{- define "vgpu-webhook.validate" -}}
{{- $v := .Values -}}
{{- if $v.webhook.matchConditions.enabled -}}
{{- range $i, $d := $v.config.devices -}}
{{- if $d.overwriteEnv -}}
{{- fail (printf "webhook.matchConditions.enabled cannot be used with config.devices[%d].overwriteEnv: true: CPU-only pods must reach the webhook to get NVIDIA_VISIBLE_DEVICES=none" $i) -}}
{{- end -}}
{{- end -}}
{{- if not (semverCompare ">=1.28.0-0" .Capabilities.KubeVersion.Version) -}}
{{- fail (printf "webhook.matchConditions.enabled needs Kubernetes 1.28 or later (this is %s)" .Capabilities.KubeVersion.Version) -}}
{{- end -}}
{{- if not (fromJsonArray (include "vgpu-webhook.resourceNames" .)) -}}
{{- fail "webhook.matchConditions.enabled needs at least one device family in config.devices" -}}
{{- end -}}
{{- end -}}
{{- if eq $v.certificates.mode "existingSecret" -}}
{{- if not $v.certificates.existingSecret.name -}}
{{- fail "certificates.existingSecret.name is required with certificates.mode existingSecret" -}}
{{- end -}}
{{- if not $v.certificates.existingSecret.caBundle -}}
{{- fail "certificates.existingSecret.caBundle is required with certificates.mode existingSecret (certs/gen-certs.sh prints it)" -}}
{{- end -}}
{{- if not (contains "-----BEGIN CERTIFICATE-----" (b64dec $v.certificates.existingSecret.caBundle)) -}}
{{- fail "certificates.existingSecret.caBundle must be the base64 of a PEM certificate" -}}
{{- end -}}
{{- end -}}
{{- if and (eq $v.certificates.mode "certManager") $v.certificates.certManager.issuerRef -}}
{{- if not $v.certificates.certManager.issuerRef.name -}}
{{- fail "certificates.certManager.issuerRef needs a name" -}}
{{- end -}}
{{- end -}}
{{- if and $v.metrics.serviceMonitor.enabled (not $v.metrics.enabled) -}}
{{- fail "metrics.serviceMonitor.enabled needs metrics.enabled" -}}
{{- end -}}
{{- if and $v.clientAuth.enabled (not $v.clientAuth.caConfigMap) -}}
{{- fail "clientAuth.caConfigMap is required with clientAuth.enabled" -}}
{{- end -}}
{{- end -}}
