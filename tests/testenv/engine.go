package testenv

import (
	"os"
	"testing"
)

// EngineEnv names the Metacontroller binary the engine tests run.
// hack/test.sh always sets it (hack/lib.sh ensure_metacontroller: given, or
// built from Metacontroller's source at the pinned tag).
const EngineEnv = "METACONTROLLER_BIN"

// RequireEngineEnv set to 1 makes a missing engine a failure instead of a
// skip: hack/test.sh sets it once it has an engine, so that no engine test
// skips there.
const RequireEngineEnv = "TEAMSPACE_REQUIRE_ENGINE"

// Engine returns the engine binary, or "" when EngineEnv is unset: the
// caller then runs what it can without the engine. without says what is
// left out then (a stub in its place, checks skipped); the caller logs it,
// and hack/test.sh lists these texts when it runs without an engine, so
// keep each call's text on one line, a string literal. Under
// TEAMSPACE_REQUIRE_ENGINE=1 a missing engine fails the test, and a path
// that is not an executable file always does.
func Engine(t testing.TB, without string) string {
	t.Helper()
	bin := os.Getenv(EngineEnv)
	if bin == "" {
		if os.Getenv(RequireEngineEnv) == "1" {
			t.Fatalf("%s=1 but %s is not set: %s", RequireEngineEnv, EngineEnv, without)
		}
		t.Logf("%s not set (hack/test.sh provides the engine): %s", EngineEnv, without)
		return ""
	}
	if fi, err := os.Stat(bin); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		t.Fatalf("%s=%s is not an executable file", EngineEnv, bin)
	}
	return bin
}

// NeedEngine returns the engine binary, or skips the test when there is
// none, saying that what did not run (see Engine: the same one-line
// literal rule, the same failure under TEAMSPACE_REQUIRE_ENGINE=1).
func NeedEngine(t testing.TB, what string) string {
	t.Helper()
	bin := os.Getenv(EngineEnv)
	if bin == "" && os.Getenv(RequireEngineEnv) != "1" {
		t.Skipf("%s not set (hack/test.sh provides the engine): %s did not run", EngineEnv, what)
	}
	return Engine(t, what+" did not run")
}
