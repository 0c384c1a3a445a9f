{{/* The labels every object carries, and the operator's pods are selected by. */}}
{{- define "portcullis.labels" -}}
app.kubernetes.io/name: portcullis
{{- end }}

{{/* The operator's ServiceAccount as the API server names its user. */}}
{{- define "portcullis.user" -}}
system:serviceaccount:{{ .Release.Namespace }}:portcullis-operator
{{- end }}

{{/* repository:tag, or repository@digest when a digest is given. */}}
{{- define "portcullis.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end }}
