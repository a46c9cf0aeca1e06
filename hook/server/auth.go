package server

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// authorized checks the bearer token the engine can send from a Secret
// (CompositeController webhook.authentication). The comparison takes the
// same time whatever the token, so timing does not leak it.
func (h *Handler) authorized(r *http.Request) bool {
	if h.cfg.BearerToken == "" {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(h.cfg.BearerToken)) == 1
}
