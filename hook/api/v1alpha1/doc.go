// Package v1alpha1 is the TeamSpace API (platform.labhub.io/v1alpha1) as Go
// types: the one definition of its fields. crd.yaml at the repository's
// root is generated from these types and their kubebuilder markers by
// controller-gen (hack/generate.sh; hack/test.sh fails when it is out of
// date), and the hook decodes a TeamSpace's spec into TeamSpaceSpec.
//
// What the schema cannot say (a quantity's canonical form, a default request
// within its total, the owners the hook never binds) is checked by the hook
// (package teamspace), once.
//
// +groupName=platform.labhub.io
// +versionName=v1alpha1
package v1alpha1
