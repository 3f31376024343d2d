{{- /*
The alert groups of the PrometheusRule, also written out by
tests/alerts for promtool.  dict: sel (the webhook's series), hook (the
API server's webhook name matcher), r (.Values.prometheusRule).
*/ -}}
{{- define "vgpu-webhook.alertGroups" -}}
groups:
  - name: vgpu-webhook
    rules:
      - alert: VgpuWebhookAPIServerFailOpen
        expr: sum(increase(apiserver_admission_webhook_fail_open_count{ {{- .hook -}} }[5m])) > 0
        labels: {severity: critical}
        annotations:
          summary: The API server admitted pods without calling the vGPU webhook (failurePolicy Ignore).
          description: GPU pods were scheduled without their vGPU defaults in the last 5 minutes.
          runbook: "the chart README (helm show readme), Alerts: VgpuWebhookAPIServerFailOpen"
      - alert: VgpuWebhookCallsRejected
        expr: sum(increase(apiserver_admission_webhook_rejection_count{ {{- .hook -}} ,error_type="calling_webhook_error"}[5m])) > 0
        labels: {severity: critical}
        annotations:
          summary: The API server refused pods because it could not call the vGPU webhook (failurePolicy Fail).
          runbook: "the chart README (helm show readme), Alerts: VgpuWebhookCallsRejected"
      - alert: VgpuWebhookCertificateExpiresSoon
        expr: min(vgpu_webhook_certificate_expiry_timestamp_seconds{ {{- .sel -}} }) - time() < {{ mul (int .r.certificateExpiryDays) 86400 }}
        for: 10m
        labels: {severity: warning}
        annotations:
          summary: The webhook's serving certificate expires in less than {{ .r.certificateExpiryDays }} days.
          runbook: "the chart README (helm show readme), Alerts: VgpuWebhookCertificateExpiresSoon"
      - alert: VgpuWebhookReloadRefused
        expr: sum(increase({__name__=~"vgpu_webhook_(certificate|config)_reloads_total",result="refused", {{- .sel -}} }[15m])) > 0
        labels: {severity: warning}
        annotations:
          summary: The webhook refused a new certificate or config and keeps serving the old one.
          runbook: "the chart README (helm show readme), Alerts: VgpuWebhookReloadRefused"
      - alert: VgpuWebhookErrors
        expr: sum(rate(vgpu_webhook_requests_total{outcome="error", {{- .sel -}} }[5m])) / sum(rate(vgpu_webhook_requests_total{ {{- .sel -}} }[5m])) > {{ .r.errorRatio }}
        for: 10m
        labels: {severity: warning}
        annotations:
          summary: More than {{ mulf .r.errorRatio 100 }}% of the webhook's answers are errors.
          runbook: "the chart README (helm show readme), Alerts: VgpuWebhookErrors"
      - alert: VgpuWebhookSlow
        expr: histogram_quantile(0.99, sum by (le) (rate(vgpu_webhook_latency_seconds_bucket{ {{- .sel -}} }[5m]))) > {{ .r.latencyP99Seconds }}
        for: 10m
        labels: {severity: warning}
        annotations:
          summary: The webhook's p99 latency is above {{ .r.latencyP99Seconds }} s.
          runbook: "the chart README (helm show readme), Alerts: VgpuWebhookSlow"
      - alert: VgpuWebhookTargetMissing
        expr: absent(up{ {{- .sel -}} } == 1)
        for: 5m
        labels: {severity: warning}
        annotations:
          summary: Prometheus scrapes no webhook pod ({{ .sel }}).
          runbook: "the chart README (helm show readme), Alerts: VgpuWebhookTargetMissing"
      {{- if dig "guardHits" "enabled" false .r }}
      - alert: VgpuWebhookGuardHits
        expr: sum by (guard, action) (increase(vgpu_webhook_guard_hits_total{ {{- .sel -}} }[15m])) > {{ dig "guardHits" "threshold" 0 .r }}
        labels: {severity: warning}
        annotations:
          summary: "The webhook's {{ "{{ $labels.guard }}" }} guard {{ "{{ $labels.action }}" }} what pods tried to write, more than {{ dig "guardHits" "threshold" 0 .r }} times in 15 minutes."
          description: A pod carried what the scheduler, the device plugin or the GPU runtime trusts (scheduler annotations, GPU env, device-list mounts); the webhook's decision log lines name the requester, the pod and the key.
          runbook: "the chart README (helm show readme), Alerts: VgpuWebhookGuardHits"
      {{- end }}
{{- end -}}
