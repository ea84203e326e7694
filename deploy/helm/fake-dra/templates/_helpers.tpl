{{/*
Names, labels and the checks every template relies on. Object names follow the kustomize base
(deploy/base): <fullname>-kubelet-plugin, <fullname>-fleet, ...; with `helm install fake-dra` the
fullname is "fake-dra" and the names are exactly the kustomize ones.
*/}}

{{- define "fake-dra.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "fake-dra.fullname" -}}
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

{{- define "fake-dra.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride -}}
{{- end -}}

{{- define "fake-dra.pluginName" -}}
{{- printf "%s-kubelet-plugin" (include "fake-dra.fullname" .) -}}
{{- end -}}

{{- define "fake-dra.fleetName" -}}
{{- printf "%s-fleet" (include "fake-dra.fullname" .) -}}
{{- end -}}

{{- define "fake-dra.serviceAccountName" -}}
{{- default (include "fake-dra.pluginName" .) .Values.serviceAccount.name -}}
{{- end -}}

{{/* What the kustomize base labels every object with. */}}
{{- define "fake-dra.selectorLabels" -}}
app.kubernetes.io/name: {{ include "fake-dra.name" . }}
{{- end -}}

{{/* Helm's bookkeeping labels on top (tests/deploy compares with kustomize without these four). */}}
{{- define "fake-dra.labels" -}}
{{ include "fake-dra.selectorLabels" . }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "fake-dra.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The driver names of the personality (files/drivers.json, from driver/personality). */}}
{{- define "fake-dra.drivers" -}}
{{- $all := .Files.Get "files/drivers.json" | fromJson -}}
{{- toJson (get $all .Values.personality) -}}
{{- end -}}

{{/* The drivers a node group of the fleet may publish: those of every personality its groups use. */}}
{{- define "fake-dra.fleetDrivers" -}}
{{- $all := .Files.Get "files/drivers.json" | fromJson -}}
{{- $out := list -}}
{{- range .Values.fleet.spec.nodeGroups -}}
{{- range get $all (default "fake-dra" .personality) -}}
{{- $out = append $out . -}}
{{- end -}}
{{- end -}}
{{- toJson ($out | uniq) -}}
{{- end -}}

{{/* A CEL list literal of strings: ['a', 'b']. */}}
{{- define "fake-dra.celList" -}}
{{- $items := list -}}
{{- range . -}}{{- $items = append $items (printf "'%s'" .) -}}{{- end -}}
[{{ join ", " $items }}]
{{- end -}}

{{/*
The Kubernetes release featureGates are checked against: kubernetesVersion; else, installing into a
live cluster, the cluster's (.Capabilities.KubeVersion) when files/gates.json has its table; else
the release fake-dra targets. Offline (`helm template`, lint, helm-python-sdk) .Capabilities holds
Helm's built-in default (v1.36.0 in Helm 4.2), not a cluster's, so it is not used: `lookup` answers
only with a live cluster (kube-system always exists there).
*/}}
{{- define "fake-dra.kubeRelease" -}}
{{- $table := .Files.Get "files/gates.json" | fromJson -}}
{{- $cluster := printf "%s.%s" .Capabilities.KubeVersion.Major (.Capabilities.KubeVersion.Minor | trimSuffix "+") -}}
{{- $live := lookup "v1" "Namespace" "" "kube-system" -}}
{{- if .Values.kubernetesVersion -}}
{{- .Values.kubernetesVersion -}}
{{- else if and $live (hasKey $table.versions $cluster) -}}
{{- $cluster -}}
{{- else -}}
{{- $table.target -}}
{{- end -}}
{{- end -}}

{{/* FAKE_DRA_FEATURES: featureGates as G=true,H=false in name order (the plugin's --features). */}}
{{- define "fake-dra.features" -}}
{{- $items := list -}}
{{- range $gate, $on := .Values.featureGates -}}
{{- $items = append $items (printf "%s=%t" $gate $on) -}}
{{- end -}}
{{- join "," $items -}}
{{- end -}}

{{- define "fake-dra.resourceApiVersion" -}}
{{- if .Values.resourceApiVersion -}}
{{- .Values.resourceApiVersion -}}
{{- else if .Capabilities.APIVersions.Has "resource.k8s.io/v1" -}}
resource.k8s.io/v1
{{- else if .Capabilities.APIVersions.Has "resource.k8s.io/v1beta2" -}}
resource.k8s.io/v1beta2
{{- end -}}
{{- end -}}
