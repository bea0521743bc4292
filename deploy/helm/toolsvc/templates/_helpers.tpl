{{- define "toolsvc.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "toolsvc.fullname" -}}
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

{{- define "toolsvc.selectorLabels" -}}
app.kubernetes.io/name: {{ include "toolsvc.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "toolsvc.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "toolsvc.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "toolsvc.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "toolsvc.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The kubelet must not kill a pod that is still draining within its bound. */}}
{{- define "toolsvc.terminationGracePeriod" -}}
{{- $min := add (int .Values.preStopSleepSeconds) (int .Values.server.shutdownTimeoutSeconds) 10 -}}
{{- if .Values.terminationGracePeriodSeconds -}}
{{- if lt (int .Values.terminationGracePeriodSeconds) (int $min) -}}
{{- fail (printf "terminationGracePeriodSeconds (%v) must be at least preStopSleepSeconds + server.shutdownTimeoutSeconds + 10 (%d)" .Values.terminationGracePeriodSeconds $min) -}}
{{- end -}}
{{- int .Values.terminationGracePeriodSeconds -}}
{{- else -}}
{{- $min -}}
{{- end -}}
{{- end -}}
