// Package server is the hook's HTTP layer: routing, limits, authentication,
// JSON in and out, logs and metrics. The decisions are made by package
// teamspace; the only side effect, the archive record, by package archive.
package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/labhub/teamspace/hook/archive"
	"github.com/labhub/teamspace/hook/teamspace"
)

// DefaultMaxRequestBytes bounds a request body. A recorded engine request is
// about 10 KiB (the CompositeController and both children with their
// managedFields); 4 MiB leaves room for large annotations without letting a
// client make the hook buffer arbitrary amounts.
const DefaultMaxRequestBytes = 4 << 20

// Config is what the handler needs.
type Config struct {
	Archive         archive.Sink
	Logger          *slog.Logger
	MaxRequestBytes int64
	// BearerToken, when set, is required on the hook endpoints.
	BearerToken string
	// Registry receives the hook's metrics; nil means a new one.
	Registry *prometheus.Registry
}

// Handler serves the webhook endpoints, /healthz and /metrics.
type Handler struct {
	cfg     Config
	metrics *metrics
	router  *mux.Router
}

// New builds the handler.
func New(cfg Config) *Handler {
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	h := &Handler{cfg: cfg, metrics: newMetrics(cfg.Registry)}
	r := mux.NewRouter()
	// sync and customize are pure: their answers are memoised by request
	// body (answerCache); finalize has the archive's side effect and is not.
	r.Handle("/sync", h.hook("sync", teamSpaceHook(h.sync), h.newAnswerCache("sync"))).Methods(http.MethodPost)
	r.Handle("/finalize", h.hook("finalize", teamSpaceHook(h.finalize), nil)).Methods(http.MethodPost)
	r.Handle("/customize", h.hook("customize", teamSpaceHook(h.customize), h.newAnswerCache("customize"))).Methods(http.MethodPost)
	// The DecoratorController of the team namespaces' quotas: pure too.
	r.Handle("/quotas", h.hook("quotas", quotas, h.newAnswerCache("quotas"))).Methods(http.MethodPost)
	// The DecoratorController of the templates' bundle: pure too.
	r.Handle("/templates", h.hook("templates", templates, h.newAnswerCache("templates"))).Methods(http.MethodPost)
	r.Handle("/templates/customize", h.hook("templates-customize", templatesCustomize, h.newAnswerCache("templates-customize"))).Methods(http.MethodPost)
	// The DecoratorController of adopted namespaces' labels: pure too.
	r.Handle("/adopted", h.hook("adopted", adopted, h.newAnswerCache("adopted"))).Methods(http.MethodPost)
	r.Handle("/adopted/customize", h.hook("adopted-customize", adoptedCustomize, h.newAnswerCache("adopted-customize"))).Methods(http.MethodPost)
	r.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	}).Methods(http.MethodGet, http.MethodHead)
	r.HandleFunc("/readyz", h.readyz).Methods(http.MethodGet, http.MethodHead)
	r.Handle("/metrics", promhttp.HandlerFor(cfg.Registry, promhttp.HandlerOpts{})).Methods(http.MethodGet)
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		writeError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", req.Method+" is not allowed on "+req.URL.Path)
	})
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		writeError(w, http.StatusNotFound, "NotFound", "no such endpoint "+req.URL.Path+"; the hook serves POST /sync, /finalize, /customize, /quotas, /templates, /templates/customize, /adopted and /adopted/customize")
	})
	h.router = r
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.router.ServeHTTP(w, r) }

// hookFunc answers one decoded, validated TeamSpace request.
type hookFunc func(context.Context, *teamspace.Request) (any, *hookError)

// endpoint decodes, validates and answers one request body, saying whose
// it is for the log (nil when that cannot be read).
type endpoint func(ctx context.Context, body []byte) (*parentID, any, *hookError)

// teamSpaceHook is the endpoint of a CompositeController hook: a request
// about a TeamSpace.
func teamSpaceHook(fn hookFunc) endpoint {
	return func(ctx context.Context, body []byte) (*parentID, any, *hookError) {
		req, err := decode(body)
		if err != nil {
			return nil, nil, invalidJSON(err)
		}
		who := identify(req)
		if err := req.Validate(); err != nil {
			return who, nil, requestError(err)
		}
		answer, herr := fn(ctx, req)
		return who, answer, herr
	}
}

// quotas is the endpoint of the DecoratorController of the team
// namespaces' quotas (teamspace.Quotas); the namespace is who it is for.
func quotas(_ context.Context, body []byte) (*parentID, any, *hookError) {
	var req teamspace.QuotasRequest
	if err := decodeInto(body, &req); err != nil {
		return nil, nil, invalidJSON(err)
	}
	who := objectID(req.Object)
	if err := req.Validate(); err != nil {
		return who, nil, requestError(err)
	}
	resp, err := teamspace.Quotas(&req)
	if err != nil {
		return who, nil, requestError(err)
	}
	return who, resp, nil
}

// templates is the endpoint of the DecoratorController of the templates'
// bundle (teamspace.Templates); the CompositeController is who it is for.
func templates(_ context.Context, body []byte) (*parentID, any, *hookError) {
	req, who, herr := decodeTemplates(body)
	if herr != nil {
		return who, nil, herr
	}
	if err := req.Validate(); err != nil {
		return who, nil, requestError(err)
	}
	resp, err := teamspace.Templates(req)
	if err != nil {
		return who, nil, requestError(err)
	}
	return who, resp, nil
}

// templatesCustomize is that DecoratorController's customize hook.
func templatesCustomize(_ context.Context, body []byte) (*parentID, any, *hookError) {
	req, who, herr := decodeTemplates(body)
	if herr != nil {
		return who, nil, herr
	}
	return who, teamspace.TemplatesCustomize(req), nil
}

// decodeTemplates reads a request of the templates' DecoratorController:
// the parent is "object" in a sync request, "parent" in a customize one.
func decodeTemplates(body []byte) (*teamspace.TemplatesRequest, *parentID, *hookError) {
	var req struct {
		teamspace.TemplatesRequest
		Parent *teamspace.Object `json:"parent"`
	}
	if err := decodeInto(body, &req); err != nil {
		return nil, nil, invalidJSON(err)
	}
	if req.Object == nil {
		req.Object = req.Parent
	}
	return &req.TemplatesRequest, objectID(req.Object), nil
}

// adopted is the endpoint of the DecoratorController of adopted
// namespaces (teamspace.Adopted); the namespace is who it is for.
func adopted(_ context.Context, body []byte) (*parentID, any, *hookError) {
	req, who, herr := decodeAdopted(body)
	if herr != nil {
		return who, nil, herr
	}
	if err := req.Validate(); err != nil {
		return who, nil, requestError(err)
	}
	return who, teamspace.Adopted(req), nil
}

// adoptedCustomize is that DecoratorController's customize hook.
func adoptedCustomize(_ context.Context, body []byte) (*parentID, any, *hookError) {
	req, who, herr := decodeAdopted(body)
	if herr != nil {
		return who, nil, herr
	}
	return who, teamspace.AdoptedCustomize(req), nil
}

// decodeAdopted reads a request of the adopted namespaces'
// DecoratorController: the parent is "object" in a sync request,
// "parent" in a customize one.
func decodeAdopted(body []byte) (*teamspace.AdoptedRequest, *parentID, *hookError) {
	var req struct {
		teamspace.AdoptedRequest
		Parent *teamspace.Object `json:"parent"`
	}
	if err := decodeInto(body, &req); err != nil {
		return nil, nil, invalidJSON(err)
	}
	if req.Object == nil {
		req.Object = req.Parent
	}
	return &req.AdoptedRequest, objectID(req.Object), nil
}

// objectID names a DecoratorController's parent (nil when the request has
// none).
func objectID(o *teamspace.Object) *parentID {
	if o == nil {
		return nil
	}
	return &parentID{Name: o.Metadata.Name, UID: string(o.Metadata.UID)}
}

// invalidJSON is a refusal of a body that does not decode (400).
func invalidJSON(err error) *hookError {
	return &hookError{http.StatusBadRequest, "InvalidJSON", err.Error()}
}

// requestError is a refusal of a request the hook cannot answer (400).
func requestError(err error) *hookError {
	var re *teamspace.RequestError
	if errors.As(err, &re) {
		return &hookError{http.StatusBadRequest, re.Reason, re.Message}
	}
	return &hookError{http.StatusBadRequest, "InvalidRequest", err.Error()}
}

// hookError is a failure with the HTTP code and a reason for metrics.
type hookError struct {
	code    int
	reason  string
	message string
}

// bufPool recycles request buffers: every request is read whole before it is
// decoded, and most are of similar size.
var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// hook wraps a hookFunc with what every hook endpoint does: authentication,
// the body limit, decoding and validation, the JSON answer, a log line and
// metrics.
func (h *Handler) hook(name string, fn endpoint, cache *answerCache) http.Handler {
	// The series of a successful call are looked up once, not per request.
	okRequests := h.metrics.requests.WithLabelValues(name, "200")
	duration := h.metrics.duration.WithLabelValues(name)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		who, body, herr := h.serve(r, fn, cache)
		code := http.StatusOK
		if herr != nil {
			code = herr.code
			writeError(w, herr.code, herr.reason, herr.message)
			h.metrics.errors.WithLabelValues(name, herr.reason).Inc()
		} else {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
		}
		elapsed := time.Since(start)
		if code == http.StatusOK {
			okRequests.Inc()
		} else {
			h.metrics.requests.WithLabelValues(name, itoa(int64(code))).Inc()
		}
		duration.Observe(elapsed.Seconds())
		h.log(name, who, code, herr, elapsed)
	})
}

func (h *Handler) serve(r *http.Request, fn endpoint, cache *answerCache) (*parentID, []byte, *hookError) {
	if !h.authorized(r) {
		return nil, nil, &hookError{http.StatusUnauthorized, "Unauthorized", "missing or wrong bearer token"}
	}
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer bufPool.Put(buf)
	if _, err := buf.ReadFrom(http.MaxBytesReader(nil, r.Body, h.cfg.MaxRequestBytes)); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, nil, &hookError{http.StatusRequestEntityTooLarge, "TooLarge", "request body is larger than the limit of " + itoa(h.cfg.MaxRequestBytes) + " bytes"}
		}
		return nil, nil, &hookError{http.StatusBadRequest, "ReadFailed", "cannot read request body: " + err.Error()}
	}
	var key [sha256.Size]byte
	if cache != nil {
		key = sha256.Sum256(buf.Bytes())
		if e := cache.get(key); e != nil {
			cache.hits.Inc()
			return &e.who, e.answer, nil
		}
	}
	who, answer, herr := fn(r.Context(), buf.Bytes())
	if herr != nil {
		return who, nil, herr
	}
	if u, ok := answer.(uncached); ok {
		answer, cache = u.answer, nil
	}
	body, err := json.Marshal(answer)
	if err != nil {
		return who, nil, &hookError{http.StatusInternalServerError, "EncodeFailed", "cannot encode the answer: " + err.Error()}
	}
	// A customize request without its parent (templates, adopted: nothing
	// to validate) is answered but never cached: the cache keeps whom an
	// answer was for. FuzzHooks found it (testdata/fuzz).
	if cache != nil && who != nil {
		cache.put(key, *who, body)
	}
	return who, body, nil
}

// decode parses a TeamSpace request body, which must be one JSON object.
func decode(body []byte) (*teamspace.Request, error) {
	var req teamspace.Request
	if err := decodeInto(body, &req); err != nil {
		return nil, err
	}
	return &req, nil
}

// decodeInto parses a request body, which must be one JSON object.
func decodeInto(body []byte, into any) error {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return errors.New("request body is empty; want a JSON object from the engine")
	}
	if trimmed[0] != '{' {
		return errors.New("request body is not a JSON object")
	}
	if err := json.Unmarshal(trimmed, into); err != nil {
		return errors.New("request body is not a valid engine request: " + err.Error())
	}
	return nil
}

// sync answers from the request alone, but for one side effect: an answer
// that lets the engine delete extra namespaces (a confirmed removal,
// teamspace.Response.Removals) is sent only once each one's archive record
// is durable; if one cannot be stored the answer keeps them (SyncBlocked)
// and says why. Neither answer is memoised: the records must be stored,
// or tried again, whenever such a request comes.
func (h *Handler) sync(ctx context.Context, req *teamspace.Request) (any, *hookError) {
	resp := teamspace.Sync(req)
	if len(resp.Removals) == 0 {
		return resp, nil
	}
	for _, rec := range resp.Removals {
		if _, err := h.cfg.Archive.Store(ctx, rec.Name, rec.UID, rec); err != nil {
			h.metrics.archiveWrites.WithLabelValues("failed").Inc()
			h.cfg.Logger.Warn("cannot archive a namespace's removal; it waits", "teamspace", rec.TeamSpace, "namespace", rec.Name, "err", err)
			return uncached{teamspace.SyncBlocked(req, err)}, nil
		}
		h.metrics.archiveWrites.WithLabelValues("stored").Inc()
	}
	return uncached{resp}, nil
}

// uncached is an answer the hook's answer cache must not keep.
type uncached struct{ answer any }

func (h *Handler) customize(_ context.Context, req *teamspace.Request) (any, *hookError) {
	return teamspace.Customize(req), nil
}

// finalize stores the archive record before anything else: if it cannot be
// made durable the answer keeps every child and says why in the status
// (ArchivePending), the engine asks again shortly, and the TeamSpace and its
// namespace stay.
func (h *Handler) finalize(ctx context.Context, req *teamspace.Request) (any, *hookError) {
	m := &req.Parent.Metadata
	file, err := h.cfg.Archive.Store(ctx, m.Name, string(m.UID), teamspace.ArchiveRecord(req))
	if err != nil {
		h.metrics.archiveWrites.WithLabelValues("failed").Inc()
		h.cfg.Logger.Warn("cannot archive; the deletion waits", "teamspace", m.Name, "uid", string(m.UID), "err", err)
		return teamspace.FinalizeBlocked(req, err), nil
	}
	h.metrics.archiveWrites.WithLabelValues("stored").Inc()
	return teamspace.Finalize(req, file), nil
}

// readyz says whether finalize can archive now: 200 "ok", or 503 with why
// (the store unreachable, the credentials refused, the bucket or the
// directory gone). Sync never touches the archive, so a sink that is down
// holds no sync; only deletions wait.
func (h *Handler) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err := h.cfg.Archive.Check(ctx); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(err.Error() + "\n"))
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

// readyTimeout bounds a readiness check: a probe must not hang on a store
// that stopped answering.
const readyTimeout = 3 * time.Second

// errorBody is the JSON of every non-200 answer.
type errorBody struct {
	Error  string `json:"error"`
	Reason string `json:"reason"`
}

func writeError(w http.ResponseWriter, code int, reason, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(errorBody{Error: message, Reason: reason})
}

func (h *Handler) log(hook string, who *parentID, code int, herr *hookError, elapsed time.Duration) {
	level := slog.LevelDebug
	switch {
	case code >= 500:
		level = slog.LevelError
	case code >= 400:
		level = slog.LevelWarn
	case hook == "finalize":
		level = slog.LevelInfo
	}
	if !h.cfg.Logger.Enabled(context.Background(), level) {
		return
	}
	attrs := []slog.Attr{slog.String("hook", hook), slog.Int("code", code), slog.Duration("duration", elapsed)}
	if who != nil {
		attrs = append(attrs, slog.String("teamspace", who.Name), slog.String("uid", who.UID), slog.Int64("generation", who.Generation))
	}
	if herr != nil {
		attrs = append(attrs, slog.String("reason", herr.reason), slog.String("error", herr.message))
	}
	h.cfg.Logger.LogAttrs(context.Background(), level, "request", attrs...)
}
