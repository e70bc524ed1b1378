{{/* Names and labels shared by every template. */}}
{{- define "troupe.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "troupe.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "troupe.selectorLabels" -}}
app.kubernetes.io/name: {{ include "troupe.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "troupe.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "troupe.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "troupe.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "troupe.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Dapr Configuration's name, referenced by the dapr.io/config annotation. */}}
{{- define "troupe.daprConfigName" -}}
{{- include "troupe.fullname" . }}
{{- end }}

{{/* Redis metadata shared by both Dapr components: address, password from the Secret, TLS. */}}
{{- define "troupe.daprRedisMetadata" -}}
- name: redisHost
  value: {{ .Values.redis.host | quote }}
{{- if .Values.redis.existingSecret }}
- name: redisPassword
  secretKeyRef:
    name: {{ .Values.redis.existingSecret }}
    key: {{ .Values.redis.existingSecretPasswordKey }}
{{- end }}
{{- if .Values.redis.tls }}
- name: enableTLS
  value: "true"
{{- end }}
{{- end }}
