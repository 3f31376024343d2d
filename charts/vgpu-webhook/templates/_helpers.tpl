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

{{/*
The webhook's image: REGISTRY/REPOSITORY:TAG or @DIGEST, the registry from
global.imageRegistry, else image.registry.  An image with no registry would
be pulled from Docker Hub's library, where it is not published: unless the
image was loaded into the nodes (pullPolicy Never), the render fails here
with what to do, instead of pods in ImagePullBackOff behind a webhook that
gates every GPU pod.
*/}}
{{- define "vgpu-webhook.image" -}}
{{- $registry := default .Values.image.registry ((.Values.global).imageRegistry) | trimSuffix "/" -}}
{{- $repo := .Values.image.repository -}}
{{- if and (not $registry) (not (contains "/" $repo)) (ne .Values.image.pullPolicy "Never") -}}
{{- fail (printf "image %q names no registry, and it is not published on Docker Hub: build it with `make image`, push it to your registry and set image.registry (or global.imageRegistry), or load it into every node and set image.pullPolicy=Never (README \"Quickstart\")" $repo) -}}
{{- end -}}
{{- $name := ternary (printf "%s/%s" $registry $repo) $repo (ne $registry "") -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" $name .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" $name (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* The pull secrets: global.imagePullSecrets, then imagePullSecrets. */}}
{{- define "vgpu-webhook.imagePullSecrets" -}}
{{- $all := concat ((.Values.global).imagePullSecrets | default list) (.Values.imagePullSecrets | default list) -}}
{{- with $all }}
imagePullSecrets:
{{- range . }}
  - {{ if kindIs "string" . }}name: {{ . }}{{ else }}{{ toYaml . }}{{ end }}
{{- end }}
{{- end -}}
{{- end -}}

{{/*
The name of a cluster-scoped object (the webhook configurations): the
object name prefix and the release namespace, so that releases of one
name in two namespaces do not take each other's objects.
*/}}
{{- define "vgpu-webhook.clusterName" -}}
{{- printf "%s-%s" (include "vgpu-webhook.fullname" .) .Release.Namespace | trunc 253 | trimSuffix "-" -}}
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
Every resource name of every configured device family, and those listed in
hami.deviceConfig.resourceNames (HAMi's families, which the chart cannot
read), as a JSON list of strings: what the matchConditions expression
looks for.
*/}}
{{- define "vgpu-webhook.resourceNames" -}}
{{- $names := list -}}
{{- range $n := .Values.hami.deviceConfig.resourceNames -}}
{{- $names = append $names $n -}}
{{- end -}}
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

{{/* --- guards (docs/behaviour.md 2.1) --------------------------------------------- */}}

{{/* The writers of the annotation guard: the value, or HAMi's accounts. */}}
{{- define "vgpu-webhook.guardWriters" -}}
{{- $w := dig "guards" "schedulerAnnotations" "writers" (list) .Values.config -}}
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
{{- $guards := $config.guards | default dict -}}
{{- $ann := $guards.schedulerAnnotations | default dict -}}
{{- $_ := set $ann "writers" (include "vgpu-webhook.guardWriters" . | fromJsonArray) -}}
{{- $_ = set $guards "schedulerAnnotations" $ann -}}
{{- $_ = set $config "guards" $guards -}}
{{- if not $config.profiles -}}{{- $_ := unset $config "profiles" -}}{{- end -}}
{{- $config | toPrettyJson -}}
{{- end -}}

{{/* The excluded namespaces: kube-system, the value, the release's, HAMi's. */}}
{{- define "vgpu-webhook.excludedNamespaces" -}}
{{- concat (list "kube-system") .Values.webhook.excludeNamespaces (list .Release.Namespace .Values.hami.namespace) | uniq | toJson -}}
{{- end -}}

{{/*
The binary's built-in guards (docs/behaviour.md §2.1), for the keys that the
values leave out: config.json then leaves them to the binary, and the
matchConditions must still send what the binary guards.
*/}}
{{- define "vgpu-webhook.builtinGuards" -}}
schedulerAnnotations:
  policy: deny
  keys:
    - hami.io/vgpu-node
    - hami.io/vgpu-time
    - hami.io/bind-time
    - hami.io/bind-phase
    - hami.io/*-devices-to-allocate
    - hami.io/*-allocated
env:
  policy: deny
  names:
    - NVIDIA_VISIBLE_DEVICES
    - CUDA_DEVICE_MEMORY_LIMIT
    - CUDA_DEVICE_MEMORY_LIMIT_*
    - CUDA_DEVICE_SM_LIMIT
    - CUDA_DEVICE_SM_LIMIT_*
    - CUDA_DEVICE_MEMORY_SHARED_CACHE
    - CUDA_DISABLE_CONTROL
    - CUDA_OVERSUBSCRIBE
    - CUDA_TASK_PRIORITY
    - GPU_CORE_UTILIZATION_POLICY
    - ACTIVE_OOM_KILLER
    - CUDA_REDIRECT
    - RECORD_KERNEL_INTERVAL
volumeMounts:
  policy: deny
  paths:
    - /var/run/nvidia-container-devices
{{- end -}}

{{/*
What the guards look at, over the top level and every profile, as JSON:
{"keys": [...], "names": [...], "paths": [...]}, the annotation key
patterns, env name patterns and mount paths of each level whose policy for
that guard is not off.  A key that a level leaves out is the level above's,
as the binary merges them: a profile's comes from the top level, the top
level's from the built-in guards.
*/}}
{{- define "vgpu-webhook.guardedNames" -}}
{{- $builtin := include "vgpu-webhook.builtinGuards" . | fromYaml -}}
{{- $top := dig "guards" (dict) .Values.config -}}
{{- $levels := list $top -}}
{{- range $p := .Values.config.profiles | default list -}}
{{- $levels = append $levels (dig "guards" (dict) $p) -}}
{{- end -}}
{{- $out := dict -}}
{{- range $g := list (list "schedulerAnnotations" "keys") (list "env" "names") (list "volumeMounts" "paths") -}}
{{- $guard := index $g 0 -}}
{{- $field := index $g 1 -}}
{{- $found := list -}}
{{- range $l := $levels -}}
{{- $policy := dig $guard "policy" "" $l | default (dig $guard "policy" "" $top) | default (index $builtin $guard "policy") -}}
{{- $items := dig $guard $field (list) $l | default (dig $guard $field (list) $top) | default (index $builtin $guard $field) -}}
{{- if ne $policy "off" -}}
{{- $found = concat $found $items -}}
{{- end -}}
{{- end -}}
{{- $_ := set $out $field ($found | uniq) -}}
{{- end -}}
{{- $out | toJson -}}
{{- end -}}

{{/*
CEL that is true when the string `var` matches one of the patterns (a list),
or more: an exact name is compared with ==; a pattern with `*` is tested by
the part before its first `*` (startsWith), or, when it starts with `*`, by
its longest part without `*` (contains; a pattern of stars alone matches
everything).  A superset of what the binary matches, so a filter built
from it never hides a request that a guard would catch.
Call with (dict "var" "k" "patterns" LIST).
*/}}
{{- define "vgpu-webhook.celPatterns" -}}
{{- $terms := list -}}
{{- range $p := .patterns -}}
{{- if not (contains "*" $p) -}}
{{- $terms = append $terms (printf "%s == %s" $.var (toJson $p)) -}}
{{- else if not (hasPrefix "*" $p) -}}
{{- $terms = append $terms (printf "%s.startsWith(%s)" $.var (index (splitList "*" $p) 0 | toJson)) -}}
{{- else -}}
{{- $longest := "" -}}
{{- range $part := splitList "*" $p -}}
{{- if gt (len $part) (len $longest) }}{{ $longest = $part }}{{ end -}}
{{- end -}}
{{- $terms = append $terms (ternary "true" (printf "%s.contains(%s)" $.var (toJson $longest)) (eq $longest "")) -}}
{{- end -}}
{{- end -}}
{{- if $terms -}}({{ $terms | uniq | join " || " }}){{- else -}}false{{- end -}}
{{- end -}}

{{/*
CEL that is true when the mount path `var` is at or below one of the paths
(a list), or more: it contains the path's last segment, whatever the
spelling (`//`, `/./`, a trailing `/`).  A path whose last segment is `.` or
`..`, or `/`, matches every mount.
Call with (dict "var" "m.mountPath" "paths" LIST).
*/}}
{{- define "vgpu-webhook.celMounts" -}}
{{- $terms := list -}}
{{- range $p := .paths -}}
{{- $last := "" -}}
{{- range $seg := splitList "/" $p -}}
{{- if $seg }}{{ $last = $seg }}{{ end -}}
{{- end -}}
{{- if has $last (list "" "." "..") -}}
{{- $terms = append $terms "true" -}}
{{- else -}}
{{- $terms = append $terms (printf "%s.contains(%s)" $.var (toJson $last)) -}}
{{- end -}}
{{- end -}}
{{- if $terms -}}({{ $terms | uniq | join " || " }}){{- else -}}false{{- end -}}
{{- end -}}

{{/* "true" when the API server has matchConditions (Kubernetes 1.28). */}}
{{- define "vgpu-webhook.hasMatchConditions" -}}
{{- if semverCompare ">=1.28.0-0" .Capabilities.KubeVersion.Version }}true{{ end -}}
{{- end -}}

{{/* "true" when a device family has overwriteEnv: true. */}}
{{- define "vgpu-webhook.overwriteEnv" -}}
{{- range $d := .Values.config.devices -}}
{{- if $d.overwriteEnv }}true{{ end -}}
{{- end -}}
{{- end -}}

{{/*
Why the mutating webhook has no matchConditions, or "" when it has them:
"disabled", "kube" (before 1.28), "overwriteEnv", or "hamiDeviceConfig"
(HAMi's file names families the chart cannot see, and
hami.deviceConfig.resourceNames does not list their resource names).
*/}}
{{- define "vgpu-webhook.mutateConditionsOff" -}}
{{- if not .Values.webhook.matchConditions.enabled -}}disabled
{{- else if not (include "vgpu-webhook.hasMatchConditions" .) -}}kube
{{- else if include "vgpu-webhook.overwriteEnv" . -}}overwriteEnv
{{- else if and .Values.hami.deviceConfig.configMap (not .Values.hami.deviceConfig.resourceNames) -}}hamiDeviceConfig
{{- end -}}
{{- end -}}

{{/*
"true" when resourceAnnotationPolicy is not off at the top level (warn when
left out) or in a profile: a pod annotation or label named like a resource
is then worth a warning or a denial, GPU resources or not.
*/}}
{{- define "vgpu-webhook.resourceAnnotations" -}}
{{- $levels := list (.Values.config.resourceAnnotationPolicy | default "warn") -}}
{{- range $p := .Values.config.profiles | default list -}}
{{- $levels = append $levels ($p.resourceAnnotationPolicy | default "off") -}}
{{- end -}}
{{- range $l := $levels -}}
{{- if ne $l "off" }}true{{ end -}}
{{- end -}}
{{- end -}}

{{/*
CEL of the mutating webhook's matchConditions: an ephemeralcontainers
UPDATE (request.subResource is left out of a request without one, so it is
tested with has()); or a pod with a container, init container or ephemeral container
that names a family resource in its limits or requests, or an env name or a
mount path that a guard looks at; or a pod that carries a guarded
annotation key; or, unless resourceAnnotationPolicy is off everywhere, a
pod with an annotation or label named like a family resource.  Guards
whose policy is off everywhere add nothing.
*/}}
{{- define "vgpu-webhook.mutateExpression" -}}
{{- $names := include "vgpu-webhook.resourceNames" . -}}
{{- $g := include "vgpu-webhook.guardedNames" . | fromJson -}}
{{- $c := list (printf "(has(c.resources) && ((has(c.resources.limits) && c.resources.limits.exists(k, k in %s)) || (has(c.resources.requests) && c.resources.requests.exists(k, k in %s))))" $names $names) -}}
{{- if $g.names -}}
{{- $c = append $c (printf "(has(c.env) && c.env.exists(e, %s))" (include "vgpu-webhook.celPatterns" (dict "var" "e.name" "patterns" $g.names))) -}}
{{- end -}}
{{- if $g.paths -}}
{{- $c = append $c (printf "(has(c.volumeMounts) && c.volumeMounts.exists(m, %s))" (include "vgpu-webhook.celMounts" (dict "var" "m.mountPath" "paths" $g.paths))) -}}
{{- end -}}
{{- $lists := list -}}
{{- range $f := list "containers" "initContainers" "ephemeralContainers" -}}
{{- $lists = append $lists (printf "(has(object.spec.%s) ? object.spec.%s : [])" $f $f) -}}
{{- end -}}
{{- $terms := list "(has(request.subResource) && request.subResource == \"ephemeralcontainers\")" (printf "(has(object.spec) && (%s).exists(c, %s))" (join " + " $lists) (join " || " $c)) -}}
{{- if $g.keys -}}
{{- $terms = append $terms (printf "(has(object.metadata.annotations) && object.metadata.annotations.exists(k, %s))" (include "vgpu-webhook.celPatterns" (dict "var" "k" "patterns" $g.keys))) -}}
{{- end -}}
{{- if include "vgpu-webhook.resourceAnnotations" . -}}
{{- range $m := list "annotations" "labels" -}}
{{- $terms = append $terms (printf "(has(object.metadata.%s) && object.metadata.%s.exists(k, k in %s))" $m $m $names) -}}
{{- end -}}
{{- end -}}
{{- join " || " $terms -}}
{{- end -}}

{{/*
CEL of the UPDATE webhook's matchConditions (pods and pods/status): a
guarded annotation key added, changed or removed.
*/}}
{{- define "vgpu-webhook.updateExpression" -}}
{{- $g := include "vgpu-webhook.guardedNames" . | fromJson -}}
{{- $k := include "vgpu-webhook.celPatterns" (dict "var" "k" "patterns" $g.keys) -}}
{{- $new := "(has(object.metadata.annotations) ? object.metadata.annotations : {})" -}}
{{- $old := "(has(oldObject.metadata.annotations) ? oldObject.metadata.annotations : {})" -}}
{{- printf "%s.exists(k, %s && (!(k in %s) || %s[k] != %s[k])) || %s.exists(k, %s && !(k in %s))" $new $k $old $old $new $old $k $new -}}
{{- end -}}

{{/*
CEL of the binding webhook's matchConditions: the Binding carries a guarded
annotation key (the API server copies a Binding's annotations onto the pod).
*/}}
{{- define "vgpu-webhook.bindingExpression" -}}
{{- $g := include "vgpu-webhook.guardedNames" . | fromJson -}}
{{- printf "has(object.metadata.annotations) && object.metadata.annotations.exists(k, %s)" (include "vgpu-webhook.celPatterns" (dict "var" "k" "patterns" $g.keys)) -}}
{{- end -}}

{{/*
namespaceSelector of every webhook: the excluded namespaces and the
namespace opt-out label.
*/}}
{{- define "vgpu-webhook.namespaceSelector" -}}
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
{{- end -}}

{{/*
namespaceSelector and objectSelector of the webhooks that see pods: the
pod opt-out label only with webhook.podOptOut.enabled.
*/}}
{{- define "vgpu-webhook.selectors" -}}
{{ include "vgpu-webhook.namespaceSelector" . }}
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
