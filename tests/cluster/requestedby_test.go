package cluster_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/labhub/teamspace/tests/testenv"
)

// Who asked for a TeamSpace is on record (issue #25): the API server writes
// the requesting user into annotation platform.labhub.io/requested-by
// (hack/deploy/requested-by.yaml, a MutatingAdmissionPolicy) and nobody but
// an exempt user changes or removes it (a rule of hack/deploy/limits.yaml).

const requestedByKey = "platform.labhub.io/requested-by"

// installRequestedBy applies requested-by.yaml and waits until a
// requester's new TeamSpace is stamped (server dry run). installLimits
// calls it: like the limits, it stays installed.
func installRequestedBy(t testing.TB) {
	t.Helper()
	testenv.Setup(t, "requested-by", func() {
		mustKubectl(t, "", "apply", "-f", deployFile(t, "requested-by.yaml"))
		if !eventually(10*time.Second, 100*time.Millisecond, func() bool {
			return stampedAs(t, limitsProbeUser) == limitsProbeUser
		}) {
			t.Fatalf("a new TeamSpace is not stamped with who asked 10s after applying requested-by.yaml (got %q)", stampedAs(t, limitsProbeUser))
		}
	})
}

// stampedAs is the requested-by a server dry run of a TeamSpace create by
// user comes back with.
func stampedAs(t testing.TB, user string) string {
	out, err := kubectl(t, teamSpace("stamp-probe", within()), "--as="+user, "create", "--dry-run=server", "-o", "jsonpath={.metadata.annotations.platform\\.labhub\\.io/requested-by}", "-f", "-")
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	return out
}

func requestedBy(t *testing.T, name string) (string, bool) {
	t.Helper()
	return metaOf(t, name, "annotations", requestedByKey)
}

// TestRequestedBy: a requester's TeamSpace names the requester, also when
// the request named someone else; -o wide shows it; neither the requester
// nor a non-exempt editor can change or remove it, an exempt user can; the
// engine's writes go on.
func TestRequestedBy(t *testing.T) {
	parallel(t)
	installLimits(t)
	s := suffix(t, 6)
	user, editor := "asker-"+s, "editor-"+s
	bindRole(t, "teamspace-requester", "User", user)
	bindRole(t, "teamspace-edit", "User", editor)
	bindRole(t, "teamspace-view", "User", editor)
	bindRole(t, "teamspace-edit", "Group", platformGroup)
	bindRole(t, "teamspace-view", "Group", platformGroup)

	name := "rb-" + s
	if err := createAs(t, as(user), name, within()); err != nil {
		t.Fatal(err)
	}
	if got, _ := requestedBy(t, name); got != user {
		t.Errorf("requested-by = %q, want %q", got, user)
	}
	forged := "rb-forged-" + s
	t.Cleanup(func() { forceDelete(t, forged) })
	if _, err := kubectl(t, annotated(teamSpace(forged, within()), requestedByKey, "the-boss"), append(as(user), "create", "-f", "-")...); err != nil {
		t.Fatalf("a requester's create naming someone else: %v, want admitted with the name corrected", err)
	}
	if got, _ := requestedBy(t, forged); got != user {
		t.Errorf("the request named the-boss: requested-by = %q, want %q (the API server's record)", got, user)
	}
	t.Run("kubectl get -o wide shows it", func(t *testing.T) {
		out := mustKubectl(t, "", "get", "teamspace", name, "-o", "wide", "--no-headers")
		if f := strings.Fields(out); len(f) == 0 || f[len(f)-1] != user {
			t.Errorf("-o wide row %q: last column is not %s", out, user)
		}
	})
	t.Run("the requester cannot touch it", func(t *testing.T) {
		_, err := kubectl(t, "", append(as(user), "annotate", "--overwrite", "teamspace", name, requestedByKey+"=someone")...)
		if err == nil || !strings.Contains(err.Error(), "forbidden") {
			t.Errorf("requester overwriting: %v, want forbidden", err)
		}
	})
	t.Run("a non-exempt editor cannot change or remove it", func(t *testing.T) {
		_, err := kubectl(t, "", append(as(editor), "annotate", "--overwrite", "teamspace", name, requestedByKey+"=someone")...)
		wantLimitRefusal(t, "overwrite", err, "annotation "+requestedByKey+" records who asked for this TeamSpace ("+user+")", "only the platform team (group system:masters or "+platformGroup+")")
		_, err = kubectl(t, "", append(as(editor), "annotate", "teamspace", name, requestedByKey+"-")...)
		wantLimitRefusal(t, "remove", err, "records who asked")
		_, err = kubectl(t, "", append(as(editor), "label", "teamspace", name, "team=a")...)
		wantAccepted(t, "the editor's label", err)
		if got, _ := requestedBy(t, name); got != user {
			t.Errorf("requested-by = %q after the refusals, want %q", got, user)
		}
	})
	t.Run("the engine's writes go on", func(t *testing.T) {
		engineWrites(t, name)
	})
	t.Run("an exempt user can change and remove it", func(t *testing.T) {
		platform := as("platform-"+s, platformGroup)
		_, err := kubectl(t, "", append(platform, "annotate", "--overwrite", "teamspace", name, requestedByKey+"=restored-owner")...)
		wantAccepted(t, "exempt overwrite", err)
		_, err = kubectl(t, "", append(platform, "annotate", "teamspace", name, requestedByKey+"-")...)
		wantAccepted(t, "exempt removal", err)
		if _, ok := requestedBy(t, name); ok {
			t.Error("requested-by still there after the exempt removal")
		}
	})
}

const requesterKey = "platform.labhub.io/requester"

// labelValueOf is the requester label of a user name as requested-by.yaml
// computes it: the runs of letters and digits joined by dots, the longest
// suffix of at most 63 characters that starts with a letter or digit.
func labelValueOf(user string) string {
	v := strings.Join(regexp.MustCompile(`[A-Za-z0-9]+`).FindAllString(user, -1), ".")
	if len(v) > 63 {
		v = strings.TrimLeft(v[len(v)-63:], ".")
	}
	return v
}

func requesterLabel(t *testing.T, name string) (string, bool) {
	t.Helper()
	return metaOf(t, name, "labels", requesterKey)
}

// TestRequesterLabel (issue #40, item 5): the API server labels a
// requester's new TeamSpace with the requester reduced to a label value
// (requested-by.yaml, teamspace-requester), over any value the request
// carried; an exempt user's gets none (not counted in an allowance);
// nobody but an exempt user changes or removes it (limits.yaml), since
// without it a TeamSpace would drop out of its requester's allowance.
func TestRequesterLabel(t *testing.T) {
	parallel(t)
	installLimits(t)
	s := suffix(t, 6)
	// A name with what a label value cannot hold: the letters and digits
	// are kept, joined by dots.
	user, editor := "Asker:"+s+"@example.com", "editor-"+s
	want := "Asker." + s + ".example.com"
	if labelValueOf(user) != want {
		t.Fatalf("labelValueOf(%q) = %q, want %q", user, labelValueOf(user), want)
	}
	bindRole(t, "teamspace-requester", "User", user)
	bindRole(t, "teamspace-edit", "User", editor)
	bindRole(t, "teamspace-view", "User", editor)
	bindRole(t, "teamspace-edit", "Group", platformGroup)
	bindRole(t, "teamspace-view", "Group", platformGroup)
	labelOf := func(who []string) (string, error) {
		return kubectl(t, teamSpace("label-probe-"+s, within()), append(who, "create", "--dry-run=server", "-o", "jsonpath={.metadata.labels}", "-f", "-")...)
	}
	var got string
	var err error
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool {
		got, err = labelOf(as(user))
		return err == nil && strings.Contains(got, want)
	}) {
		t.Fatalf("a requester's new TeamSpace: labels %q, %v; want %s=%s", got, err, requesterKey, want)
	}
	if got, err := labelOf(as("platform-"+s, platformGroup)); err != nil || strings.Contains(got, requesterKey) {
		t.Errorf("an exempt user's new TeamSpace: labels %q, %v; want no %s", got, err, requesterKey)
	}
	long := "system:serviceaccount:a-namespace-with-a-long-name-" + s + ":and-a-long-serviceaccount-name"
	bindRole(t, "teamspace-requester", "User", long)
	if got, err := labelOf(as(long)); err != nil || !strings.Contains(got, `"`+requesterKey+`":"`+labelValueOf(long)+`"`) {
		t.Errorf("a name longer than a label value: labels %q, %v; want %q, its last 63 characters from a letter or digit", got, err, labelValueOf(long))
	}

	name := "rl-" + s
	t.Cleanup(func() { forceDelete(t, name) })
	if _, err := kubectl(t, labelled(teamSpace(name, within()), requesterKey, "someone-else"), append(as(user), "create", "-f", "-")...); err != nil {
		t.Fatalf("a requester's create with another's label: %v, want admitted with the label corrected", err)
	}
	if got, _ := requesterLabel(t, name); got != want {
		t.Errorf("the request carried someone-else: %s = %q, want %q", requesterKey, got, want)
	}
	t.Run("a non-exempt editor cannot change or remove it", func(t *testing.T) {
		_, err := kubectl(t, "", append(as(editor), "label", "--overwrite", "teamspace", name, requesterKey+"=someone")...)
		wantLimitRefusal(t, "overwrite", err, "label "+requesterKey+" counts this TeamSpace in its requester's allowance (\""+want+"\")", "only the platform team")
		_, err = kubectl(t, "", append(as(editor), "label", "teamspace", name, requesterKey+"-")...)
		wantLimitRefusal(t, "remove", err, "counts this TeamSpace")
		if got, _ := requesterLabel(t, name); got != want {
			t.Errorf("%s = %q after the refusals, want %q", requesterKey, got, want)
		}
	})
	t.Run("the engine's writes go on", func(t *testing.T) {
		engineWrites(t, name)
	})
	t.Run("an exempt user can change and remove it", func(t *testing.T) {
		platform := as("platform-"+s, platformGroup)
		_, err := kubectl(t, "", append(platform, "label", "--overwrite", "teamspace", name, requesterKey+"=moved")...)
		wantAccepted(t, "exempt overwrite", err)
		_, err = kubectl(t, "", append(platform, "label", "teamspace", name, requesterKey+"-")...)
		wantAccepted(t, "exempt removal", err)
		if _, ok := requesterLabel(t, name); ok {
			t.Error("the label is still there after the exempt removal")
		}
	})
}

// TestRequestedByWithoutMutation: on a release without the
// MutatingAdmissionPolicy (or before it is installed) nothing is stamped,
// and the limits still refuse a requester's TeamSpace that names someone
// else; naming oneself or nobody is fine; leaving memory out is refused
// (no default fills it in).
func TestRequestedByWithoutMutation(t *testing.T) {
	alone(t, "it deletes requested-by.yaml's policy, which stamps every requester's TeamSpace, and puts it back")
	installLimits(t)
	mustKubectl(t, "", "delete", "-f", deployFile(t, "requested-by.yaml"))
	testenv.Undo("requested-by")
	t.Cleanup(func() { installLimits(t) })
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool { return stampedAs(t, limitsProbeUser) == "" }) {
		t.Fatalf("new TeamSpaces still stamped 10s after deleting requested-by.yaml: %q", stampedAs(t, limitsProbeUser))
	}
	s := suffix(t, 6)
	user := "asker-" + s
	bindRole(t, "teamspace-requester", "User", user)
	_, err := kubectl(t, annotated(teamSpace("rb-nomut-"+s, within()), requestedByKey, "the-boss"), append(as(user), "create", "--dry-run=server", "-f", "-")...)
	wantLimitRefusal(t, "naming someone else", err, `annotation `+requestedByKey+`: "the-boss" is not who asks (`+user+`)`)
	_, err = kubectl(t, annotated(teamSpace("rb-nomut-"+s, within()), requestedByKey, user), append(as(user), "create", "--dry-run=server", "-f", "-")...)
	wantAccepted(t, "naming oneself", err)
	_, err = kubectl(t, teamSpace("rb-nomut-"+s, within()), append(as(user), "create", "--dry-run=server", "-f", "-")...)
	wantAccepted(t, "naming nobody", err)
	// The requester label likewise: another's refused, one's own or none
	// admitted (none: not counted; the allowance needs the policy).
	_, err = kubectl(t, labelled(teamSpace("rb-nomut-"+s, within()), requesterKey, "the-boss"), append(as(user), "create", "--dry-run=server", "-f", "-")...)
	wantLimitRefusal(t, "another's requester label", err, `label `+requesterKey+`: "the-boss" is not who asks ("asker.`+s+`")`)
	_, err = kubectl(t, labelled(teamSpace("rb-nomut-"+s, within()), requesterKey, "asker."+s), append(as(user), "create", "--dry-run=server", "-f", "-")...)
	wantAccepted(t, "one's own requester label", err)
	// Without the default memory (teamspace-default-memory) a requester's
	// TeamSpace that leaves memory out is refused by the limits.
	t.Run("refused/memory-unset", func(t *testing.T) {
		wantLimitRefusal(t, "memory-unset", createAs(t, as(user), "lim-memory-unset-"+s, with(within(), "memory", nil)),
			"spec.memory: unset, which leaves memory in the namespace unlimited", `"8Gi"`, "set spec.memory")
	})
}

// TestDefaultMemory (issue #40): a requester whose new TeamSpace leaves
// spec.memory out gets the platform's defaultMemory (requested-by.yaml,
// teamspace-default-memory), as a LimitRange gives a default, instead of a
// refusal; it is still held to maxMemory; an exempt user gets no default;
// without the key the requester is refused as before.
func TestDefaultMemory(t *testing.T) {
	alone(t, changesLimits)
	installLimits(t)
	s, user := limitsCast(t, "nomem")
	noMemory := with(within(), "memory", nil)
	memoryOf := func(who []string) (string, error) {
		return kubectl(t, teamSpace("mem-probe-"+s, noMemory), append(who, "create", "--dry-run=server", "-o", "jsonpath={.spec.memory}", "-f", "-")...)
	}
	var got string
	var err error
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool { got, err = memoryOf(as(user)); return err == nil && got == "1Gi" }) {
		t.Fatalf("a requester's TeamSpace without memory: memory %q, %v; want the shipped defaultMemory 1Gi", got, err)
	}
	if got, err := memoryOf(as("platform-"+s, platformGroup)); err != nil || got != "" {
		t.Errorf("an exempt user's TeamSpace without memory: memory %q, %v; want none added", got, err)
	}
	name := "nomem-" + s
	if err := createAs(t, as(user), name, noMemory); err != nil {
		t.Fatal(err)
	}
	if obj, _ := getObject(t, "teamspace", name); str(field(obj, "spec", "memory")) != "1Gi" {
		t.Errorf("stored spec.memory = %v, want 1Gi", field(obj, "spec", "memory"))
	}

	t.Cleanup(func() { resetLimitsConfig(t) })
	setLimit(t, "defaultMemory", "16Gi")
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool { _, err = memoryOf(as(user)); return err != nil }) {
		t.Fatalf("defaultMemory 16Gi above maxMemory 8Gi: the requester's TeamSpace was admitted")
	}
	wantLimitRefusal(t, "a default above maxMemory", err, `spec.memory: "16Gi" is above the platform limit of "8Gi"`)
	setLimit(t, "defaultMemory", "")
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool {
		_, err = memoryOf(as(user))
		return err != nil && strings.Contains(err.Error(), "spec.memory: unset")
	}) {
		t.Fatalf("without defaultMemory: %v, want the refusal for unset memory", err)
	}
}
