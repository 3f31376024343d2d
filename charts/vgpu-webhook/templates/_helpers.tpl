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
{{- with include "vgpu-webhook.guardedPodExpression" . }} || {{ . }}{{ end -}}
{{- end -}}

{{/* --- guards (SPEC 2.1) --------------------------------------------- */}}

{{/* The writers of the annotation guard: the value, or HAMi's accounts. */}}
{{- define "vgpu-webhook.guardWriters" -}}
{{- $w := .Values.config.guards.schedulerAnnotations.writers | default list -}}
{{- if not $w -}}
{{- $ns := .Values.hami.namespace -}}
{{- $rel := .Values.hami.releaseName -}}
{{- $w = list (printf "system:serviceaccount:%s:%s-scheduler" $ns $rel) (printf "system:serviceaccount:%s:%s-device-plugin" $ns $rel) -}}
{{- end -}}
{{- $w | toJson -}}
{{- end -}}

{{/* config.json: .Values.config with the writers filled in. */}}
{{- define "vgpu-webhook.configJson" -}}
{{- $config := deepCopy .Values.config -}}
{{- $ann := index $config.guards "schedulerAnnotations" -}}
{{- $_ := set $ann "writers" (include "vgpu-webhook.guardWriters" . | fromJsonArray) -}}
{{- if not $config.profiles -}}{{- $_ := unset $config "profiles" -}}{{- end -}}
{{- $config | toPrettyJson -}}
{{- end -}}

{{/* The excluded namespaces: kube-system, the value, the release's, HAMi's. */}}
{{- define "vgpu-webhook.excludedNamespaces" -}}
{{- concat (list "kube-system") .Values.webhook.excludeNamespaces (list .Release.Namespace .Values.hami.namespace) | uniq | toJson -}}
{{- end -}}

{{/* "true" when the annotation guard is not off, top level or in a profile. */}}
{{- define "vgpu-webhook.annotationGuardOn" -}}
{{- $on := ne .Values.config.guards.schedulerAnnotations.policy "off" -}}
{{- range $p := .Values.config.profiles | default list -}}
{{- $g := dig "guards" "schedulerAnnotations" "policy" "" $p -}}
{{- if and $g (ne $g "off") -}}{{- $on = true -}}{{- end -}}
{{- end -}}
{{- if $on }}true{{ end -}}
{{- end -}}

{{/* "true" when the env guard is not off, top level or in a profile. */}}
{{- define "vgpu-webhook.envGuardOn" -}}
{{- $on := ne .Values.config.guards.env.policy "off" -}}
{{- range $p := .Values.config.profiles | default list -}}
{{- $g := dig "guards" "env" "policy" "" $p -}}
{{- if and $g (ne $g "off") -}}{{- $on = true -}}{{- end -}}
{{- end -}}
{{- if $on }}true{{ end -}}
{{- end -}}

{{/*
CEL that is true when the string `var` matches one of the patterns (a list):
an exact name is compared with ==, a pattern with `*` by the prefix before
its first `*` (a superset of what it matches, so a filter built from it
never hides a pod the guard would catch).  A pattern that starts with `*`
has no prefix: the chart refuses it where CEL is needed.
Call with (dict "var" "k" "patterns" LIST "what" "config.guards...").
*/}}
{{- define "vgpu-webhook.celPatterns" -}}
{{- $terms := list -}}
{{- range $p := .patterns -}}
{{- if hasPrefix "*" $p -}}
{{- fail (printf "%s: pattern %q starts with \"*\" and cannot be written as a CEL prefix test for matchConditions; write a prefix or an exact name" $.what $p) -}}
{{- end -}}
{{- if contains "*" $p -}}
{{- $terms = append $terms (printf "%s.startsWith(%s)" $.var (index (splitList "*" $p) 0 | toJson)) -}}
{{- else -}}
{{- $terms = append $terms (printf "%s == %s" $.var (toJson $p)) -}}
{{- end -}}
{{- end -}}
{{- if $terms -}}({{ $terms | uniq | join " || " }}){{- else -}}false{{- end -}}
{{- end -}}

{{/*
CEL over `object` (a pod): it carries a guarded annotation key, or a
container or init container has a guarded env name.
*/}}
{{- define "vgpu-webhook.guardedPodExpression" -}}
{{- $g := .Values.config.guards -}}
{{- $terms := list -}}
{{- if ne $g.schedulerAnnotations.policy "off" -}}
{{- $k := include "vgpu-webhook.celPatterns" (dict "var" "k" "patterns" $g.schedulerAnnotations.keys "what" "config.guards.schedulerAnnotations.keys") -}}
{{- $terms = append $terms (printf "(has(object.metadata.annotations) && object.metadata.annotations.exists(k, %s))" $k) -}}
{{- end -}}
{{- if ne $g.env.policy "off" -}}
{{- $e := include "vgpu-webhook.celPatterns" (dict "var" "e.name" "patterns" $g.env.names "what" "config.guards.env.names") -}}
{{- $terms = append $terms (printf "object.spec.containers.exists(c, has(c.env) && c.env.exists(e, %s))" $e) -}}
{{- $terms = append $terms (printf "(has(object.spec.initContainers) && object.spec.initContainers.exists(c, has(c.env) && c.env.exists(e, %s)))" $e) -}}
{{- end -}}
{{- $terms | join " || " -}}
{{- end -}}

{{/* "true" when every annotation key pattern has a CEL prefix test. */}}
{{- define "vgpu-webhook.keysHaveCel" -}}
{{- $ok := true -}}
{{- range .Values.config.guards.schedulerAnnotations.keys -}}
{{- if hasPrefix "*" . }}{{ $ok = false }}{{ end -}}
{{- end -}}
{{- if $ok }}true{{ end -}}
{{- end -}}

{{/*
CEL of the UPDATE webhook's matchConditions: an ephemeralcontainers update,
or a guarded annotation key added, changed or removed.
*/}}
{{- define "vgpu-webhook.updateExpression" -}}
{{- $k := include "vgpu-webhook.celPatterns" (dict "var" "k" "patterns" .Values.config.guards.schedulerAnnotations.keys "what" "config.guards.schedulerAnnotations.keys") -}}
{{- $new := "(has(object.metadata.annotations) ? object.metadata.annotations : {})" -}}
{{- $old := "(has(oldObject.metadata.annotations) ? oldObject.metadata.annotations : {})" -}}
{{- printf "request.subResource == \"ephemeralcontainers\" || %s.exists(k, %s && (!(k in %s) || %s[k] != %s[k])) || %s.exists(k, %s && !(k in %s))" $new $k $old $old $new $old $k $new -}}
{{- end -}}

{{/*
namespaceSelector and objectSelector of both webhook configurations: the
excluded namespaces and the namespace opt-out label; the pod opt-out label
only with webhook.podOptOut.enabled.
*/}}
{{- define "vgpu-webhook.selectors" -}}
namespaceSelector:
  matchExpressions:
    - key: kubernetes.io/metadata.name
      operator: NotIn
      values:
        {{- include "vgpu-webhook.excludedNamespaces" . | fromJsonArray | toYaml | nindent 8 }}
    - key: hami.io/webhook
      operator: NotIn
      values: ["ignore"]
    {{- with .Values.webhook.namespaceSelectorExpressions }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- $object := .Values.webhook.objectSelectorExpressions | default list }}
{{- if .Values.webhook.podOptOut.enabled }}
{{- $object = prepend $object (dict "key" "hami.io/webhook" "operator" "NotIn" "values" (list "ignore")) }}
{{- end }}
{{- if $object }}
objectSelector:
  matchExpressions:
    {{- toYaml $object | nindent 4 }}
{{- else }}
objectSelector: {}
{{- end }}
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
{{- $_ := include "vgpu-webhook.guardedPodExpression" . -}}
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
