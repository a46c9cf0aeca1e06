package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/labhub/teamspace/hack/bench/internal/benchutil"
	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// What the platform puts in every team namespace (issue #53), at fleet
// scale.
const (
	// templateName is the ConfigMap template phase templates adds,
	// changes and deletes; its copies are watched by this name.
	templateName = "fleet-template"
	// secretsNamespace holds phase secrets' unrelated Secrets.
	secretsNamespace = "fleet-unrelated-secrets"
)

// templates: a ConfigMap template added, changed and deleted, each timed
// until every team namespace of the fleet has its copy as the template
// is (or none), with the engine's requests, hook calls and status writes
// of each; then until every TeamSpace is Ready again. Once added and
// settled, rest long with the template there (template_rest).
func (f *fleet) templates(ctx context.Context, rest time.Duration) error {
	if ready := f.readyCount(); ready != len(f.names) {
		return fmt.Errorf("not all Ready before the templates (%d/%d)", ready, len(f.names))
	}
	kube := informers.NewSharedInformerFactoryWithOptions(f.c.Kube, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", templateName).String()
	}))
	inf := kube.Core().V1().ConfigMaps().Informer()
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	kube.Start(cctx.Done())
	cache.WaitForCacheSync(cctx.Done(), inf.HasSynced)
	copies := inf.GetStore()
	// reached counts the team namespaces whose copy holds value ("" for
	// none there).
	reached := func(value string) int {
		n := 0
		for _, ns := range f.namespaces {
			obj, ok, _ := copies.GetByKey(ns + "/" + templateName)
			switch {
			case value == "" && !ok:
				n++
			case ok && obj.(*corev1.ConfigMap).Data["v"] == value:
				n++
			}
		}
		return n
	}
	cms := f.c.Kube.CoreV1().ConfigMaps(v1alpha1.SystemNamespace)
	defer func() { _ = cms.Delete(context.Background(), templateName, metav1.DeleteOptions{}) }()
	steps := []struct {
		name, value string
		do          func() error
	}{
		{"added", "1", func() error {
			_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: templateName, Labels: map[string]string{v1alpha1.TemplateLabel: "true"}},
				Data: map[string]string{"v": "1"}}, metav1.CreateOptions{})
			return err
		}},
		{"changed", "2", func() error {
			_, err := cms.Patch(ctx, templateName, types.MergePatchType, []byte(`{"data":{"v":"2"}}`), metav1.PatchOptions{})
			return err
		}},
		{"deleted", "", func() error { return cms.Delete(ctx, templateName, metav1.DeleteOptions{}) }},
	}
	for _, s := range steps {
		w := f.begin(ctx)
		if err := s.do(); err != nil {
			return fmt.Errorf("template %s: %v", s.name, err)
		}
		var first, all time.Duration
		deadline := w.start.Add(f.timeout)
		for {
			n := reached(s.value)
			if first == 0 && n > 0 {
				first = time.Since(w.start)
			}
			if all == 0 && n == len(f.namespaces) {
				all = time.Since(w.start)
			}
			if all != 0 && f.readyCount() == len(f.names) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("template %s: after %s %d/%d namespaces, %d/%d Ready", s.name, f.timeout, n, len(f.namespaces), f.readyCount(), len(f.names))
			}
			time.Sleep(50 * time.Millisecond)
		}
		allReady := time.Since(w.start)
		// What follows the last copy (status writes of the second pass)
		// is in the window too: wait until the engine is quiet.
		time.Sleep(3 * time.Second)
		line, _ := w.end(ctx)
		f.result("template_%s count=%d namespaces=%d first_ms=%s all_namespaces_ms=%s all_ready_ms=%s %s",
			s.name, len(f.names), len(f.namespaces), benchutil.Ms(first), benchutil.Ms(all), benchutil.Ms(allReady), line)
		if s.name == "added" {
			if err := f.settle(ctx); err != nil {
				return err
			}
			r := f.begin(ctx)
			time.Sleep(rest)
			line, sums := r.end(ctx)
			f.result("template_rest count=%d window_s=%.0f %s %s", len(f.names), rest.Seconds(), benchutil.FormatCores(benchutil.Cores(r.cpu, sums.cpu, sums.secs), f.emptyCores), line)
		}
	}
	return nil
}

// secrets: what the engine pays for watching Secrets (a Secret template
// means its informers hold every Secret of the cluster): n Secrets no
// TeamSpace has anything to do with are created in a namespace of their
// own; the engine's memory before and after, the requests and CPU of
// creating them, and a window at rest with them there. They are deleted
// afterwards.
func (f *fleet) secrets(ctx context.Context, n int, rest time.Duration) error {
	nsAPI := f.c.Kube.CoreV1().Namespaces()
	if _, err := nsAPI.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secretsNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	defer func() { _ = nsAPI.Delete(context.Background(), secretsNamespace, metav1.DeleteOptions{}) }()
	// What the phases before left to the quota controller is over first.
	if err := f.settle(ctx); err != nil {
		return err
	}
	before := benchutil.FormatMemory(f.procs)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("unrelated-%05d", i)
	}
	// 1 KiB of data each, about a small TLS key or a token file.
	payload := []byte(strings.Repeat("x", 1024))
	api := f.c.Kube.CoreV1().Secrets(secretsNamespace)
	w := f.begin(ctx)
	if err := parallel(names, 16, func(name string) error {
		_, err := api.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{"key": payload}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}); err != nil {
		return err
	}
	created := time.Since(w.start)
	// The engine takes every one of them in through its informers, behind
	// the API server: the window lasts until it is below 0.05 cores for 5 s.
	for deadline := time.Now().Add(f.timeout); time.Now().Before(deadline); {
		before := f.sampleCPU()
		time.Sleep(5 * time.Second)
		if benchutil.Cores(before, f.sampleCPU(), 5)["engine"] < 0.05 {
			break
		}
	}
	line, sums := w.end(ctx)
	cores := benchutil.Cores(w.cpu, sums.cpu, sums.secs)
	f.result("secrets_created count=%d secrets=%d created_ms=%s engine_quiet_ms=%s %s %s", len(f.names), n, benchutil.Ms(created), benchutil.Ms(time.Since(w.start)), benchutil.FormatCores(cores, nil), line)
	if err := f.settle(ctx); err != nil {
		return err
	}
	after := benchutil.FormatMemory(f.procs)
	r := f.begin(ctx)
	time.Sleep(rest)
	line, sums = r.end(ctx)
	cores = benchutil.Cores(r.cpu, sums.cpu, sums.secs)
	f.result("secrets_rest count=%d secrets=%d window_s=%.0f %s %s", len(f.names), n, rest.Seconds(), benchutil.FormatCores(cores, f.emptyCores), line)
	f.result("secrets_memory count=%d secrets=%d before: %s", len(f.names), n, before)
	f.result("secrets_memory count=%d secrets=%d after: %s", len(f.names), n, after)
	fmt.Fprintf(os.Stderr, "secrets: deleting namespace %s\n", secretsNamespace)
	return nil
}
