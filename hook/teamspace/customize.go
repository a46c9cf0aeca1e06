package teamspace

// Customize asks the engine to show namespace team-<name> as a related object.
func Customize(r *Request) *CustomizeResponse {
	return &CustomizeResponse{RelatedResources: []RelatedResourceRule{{
		APIVersion: "v1",
		Resource:   "namespaces",
		Names:      []string{NamespaceName(r.Parent.Metadata.Name)},
	}}}
}
