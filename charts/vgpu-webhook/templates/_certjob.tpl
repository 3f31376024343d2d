{{/*
The spec of a Job of the job certificate mode (templates/certjob.yaml): the
image's own binary with args, as the ServiceAccount FULLNAME-ACCOUNT, with
the webhook pod's security settings.  Call with
(dict "ctx" . "account" "certs" "args" LIST).
*/}}
{{- define "vgpu-webhook.certsJobSpec" -}}
{{- $ := .ctx -}}
{{- $fullname := include "vgpu-webhook.fullname" $ -}}
spec:
  backoffLimit: {{ $.Values.certificates.job.backoffLimit }}
  activeDeadlineSeconds: {{ $.Values.certificates.job.activeDeadlineSeconds }}
  template:
    metadata:
      labels:
        helm.sh/chart: {{ include "vgpu-webhook.chart" $ }}
        app.kubernetes.io/name: {{ include "vgpu-webhook.name" $ }}-certs
        app.kubernetes.io/instance: {{ $.Release.Name }}
        app.kubernetes.io/managed-by: {{ $.Release.Service }}
        app.kubernetes.io/component: certificates
        hami.io/webhook: ignore
    spec:
      serviceAccountName: {{ $fullname }}-{{ .account }}
      automountServiceAccountToken: true
      restartPolicy: OnFailure
      {{- with $.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $.Values.priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      {{- with $.Values.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $.Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        runAsGroup: 65532
        seccompProfile:
          type: RuntimeDefault
      containers:
        - name: certs
          image: {{ include "vgpu-webhook.image" $ | quote }}
          imagePullPolicy: {{ $.Values.image.pullPolicy }}
          args:
            {{- toYaml .args | nindent 12 }}
          securityContext:
            runAsNonRoot: true
            runAsUser: 65532
            runAsGroup: 65532
            allowPrivilegeEscalation: false
            privileged: false
            readOnlyRootFilesystem: true
            capabilities:
              drop: ["ALL"]
            seccompProfile:
              type: RuntimeDefault
          resources:
            {{- toYaml $.Values.certificates.job.resources | nindent 12 }}
{{- end -}}

{{/*
A hook Job of the job certificate mode.  Call with (dict "ctx" . "name"
"certs-setup" "account" "certs-setup" "args" LIST "annotations" DICT).
*/}}
{{- define "vgpu-webhook.certsJob" -}}
{{- $ := .ctx -}}
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ include "vgpu-webhook.fullname" $ }}-{{ .name }}
  namespace: {{ $.Release.Namespace }}
  labels:
    {{- include "vgpu-webhook.labels" $ | nindent 4 }}
  annotations:
    {{- toYaml .annotations | nindent 4 }}
{{ include "vgpu-webhook.certsJobSpec" . }}
{{- end -}}
