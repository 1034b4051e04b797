{{/* Names, labels and the per-role settings shared by every template. */}}

{{- define "pareis.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "pareis.fullname" -}}
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

{{- define "pareis.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "pareis.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "pareis.selectorLabels" -}}
app.kubernetes.io/name: {{ include "pareis.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "pareis.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "pareis.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "pareis.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "pareis.secretName" -}}
{{- if .Values.secrets.create }}
{{- include "pareis.fullname" . }}
{{- else }}
{{- required "secrets.existingSecret is required when secrets.create is false" .Values.secrets.existingSecret }}
{{- end }}
{{- end }}

{{/* The Secret's data: secrets.env as PAREIS_* variables (the release's Secret and the topics Job's copy). */}}
{{- define "pareis.secretData" -}}
{{- $data := dict }}
{{- range $key, $value := .Values.secrets.env }}
{{- $_ := set $data $key ($value | toString) }}
{{- end }}
{{- toYaml $data }}
{{- end }}

{{/* The settings file of every role: .Values.config plus the HTTP port the probes use. */}}
{{- define "pareis.config" -}}
{{- $runtime := merge (dict "http_port" .Values.httpPort) (default dict .Values.config.runtime) }}
{{- toYaml (merge (dict "runtime" $runtime) (omit .Values.config "runtime")) }}
{{- end }}

{{/* The Settings.kafka.topics field each role consumes (the role registry, pareis/compose/roles.py). */}}
{{- define "pareis.inputTopicKey" -}}
{{- get (dict "lineage" "mcl_versioned" "assertions" "mcl_timeseries" "incidents" "signals" "scores" "signals" "effects" "effects") . }}
{{- end }}

{{/*
The enabled roles as a list of dicts: name, the role's values over .Values.roleDefaults, and derived names.
Usage: {{- range (include "pareis.roles" . | fromYamlArray) }} … {{ end }}
*/}}
{{- define "pareis.roles" -}}
{{- $roles := list }}
{{- range $name, $role := .Values.roles }}
{{- if not (hasKey (dict "lineage" 1 "assertions" 1 "incidents" 1 "scores" 1 "effects" 1) $name) }}
{{- fail (printf "roles.%s: unknown role (lineage, assertions, incidents, scores, effects)" $name) }}
{{- end }}
{{- if $role.enabled }}
{{- $merged := mergeOverwrite (deepCopy $.Values.roleDefaults) (deepCopy $role) }}
{{- $_ := set $merged "name" $name }}
{{- $_ := set $merged "fullname" (printf "%s-%s" (include "pareis.fullname" $) $name | trunc 63 | trimSuffix "-") }}
{{- $_ := set $merged "group" (printf "%s-%s" $.Values.config.kafka.group_prefix $name) }}
{{- $_ := set $merged "topic" (get $.Values.config.kafka.topics (include "pareis.inputTopicKey" $name)) }}
{{- $roles = append $roles $merged }}
{{- end }}
{{- end }}
{{- toYaml $roles }}
{{- end }}

{{- define "pareis.validate" -}}
{{- if ge (float64 .Values.config.runtime.shutdown_grace_s) (float64 .Values.terminationGracePeriodSeconds) }}
{{- fail "config.runtime.shutdown_grace_s must be below terminationGracePeriodSeconds" }}
{{- end }}
{{- end }}
