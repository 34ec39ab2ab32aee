{{/* Chart name. */}}
{{- define "htc.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: release-chart, or the release name when it contains the chart name. */}}
{{- define "htc.fullname" -}}
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

{{- define "htc.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "htc.selectorLabels" -}}
app.kubernetes.io/name: {{ include "htc.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "htc.labels" -}}
helm.sh/chart: {{ include "htc.chart" . }}
{{ include "htc.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The htc image; the HAProxy container runs it too. */}}
{{- define "htc.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{- define "htc.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "htc.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "htc.configName" -}}
{{- default (include "htc.fullname" .) .Values.configName }}
{{- end }}

{{/* The kubernetes.io/tls Secret holding the webhook's serving certificate. */}}
{{- define "htc.certSecretName" -}}
{{- printf "%s-webhook-tls" (include "htc.fullname" .) }}
{{- end }}

{{/* The Lease the replicas elect their leader with (controller.LeaseName). */}}
{{- define "htc.leaseName" -}}
{{- printf "%s-leader" (include "htc.configName" .) }}
{{- end }}

{{- define "htc.webhookConfigurationName" -}}
{{- include "htc.fullname" . }}
{{- end }}

{{/*
htc.watched: the watched resources as a YAML list of
{key, group, version, resource, webhookValidation, writeStatus}, sorted by key. The one
place that reads .Values.config.watchedResources for RBAC and the webhook.
*/}}
{{- define "htc.watched" -}}
{{- $out := list }}
{{- $wr := .Values.config.watchedResources | default dict }}
{{- range $key := keys $wr | sortAlpha }}
{{- $r := get $wr $key }}
{{- if $r }}
{{- if not (and $r.apiVersion $r.resources) }}
{{- fail (printf "config.watchedResources.%s needs apiVersion and resources" $key) }}
{{- end }}
{{- $parts := splitList "/" $r.apiVersion }}
{{- $group := "" }}{{ $version := first $parts }}
{{- if eq (len $parts) 2 }}{{ $group = first $parts }}{{ $version = last $parts }}
{{- else if ne (len $parts) 1 }}{{ fail (printf "config.watchedResources.%s.apiVersion %q is not group/version or version" $key $r.apiVersion) }}
{{- end }}
{{- $out = append $out (dict "key" $key "group" $group "version" $version "resource" $r.resources "webhookValidation" (eq (toString $r.webhookValidation) "true") "writeStatus" (eq (toString $r.writeStatus) "true")) }}
{{- end }}
{{- end }}
{{- toYaml (dict "items" $out) }}
{{- end }}
