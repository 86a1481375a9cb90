package conformance

import (
	"encoding/xml"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestParseSpecs(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
		err      string
	}{
		{name: "names and comments", in: "# group\n[sig-node] Pods a [Conformance]\n\n  [sig-node] Pods b (x) [Conformance]  \n",
			want: []string{"[sig-node] Pods a [Conformance]", "[sig-node] Pods b (x) [Conformance]"}},
		{name: "empty", in: "# nothing\n"},
		{name: "duplicate", in: "a\nb\na\n", err: `line 3: "a" is already on line 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseSpecs(strings.NewReader(tc.in))
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestFocusOfMatchesExactlyTheNames(t *testing.T) {
	specs := []string{"[sig-node] Pods should get a host IP [NodeConformance] [Conformance]", "[sig-node] a (b) c.d [Conformance]"}
	re := regexp.MustCompile(FocusOf(specs))
	for _, s := range specs {
		if !re.MatchString("Kubernetes e2e suite " + s) {
			t.Errorf("focus does not match %q", s)
		}
	}
	for _, s := range []string{"[sig-node] a (b) cXd [Conformance]", "x" + specs[0], specs[0] + " x"} {
		if re.MatchString(s) {
			t.Errorf("focus matches %q", s)
		}
	}
}

func TestSelectSpecs(t *testing.T) {
	specs := []string{"[sig-node] Pods a", "[sig-storage] ConfigMap b", "[sig-node] Pods c"}
	got, err := selectSpecs(specs, `Pods`)
	if err != nil || strings.Join(got, "|") != "[sig-node] Pods a|[sig-node] Pods c" {
		t.Fatalf("got %q, %v", got, err)
	}
	if _, err := selectSpecs(specs, `Nothing`); err == nil {
		t.Fatal("a focus that matches nothing was accepted")
	}
	if _, err := selectSpecs(specs, `(`); err == nil {
		t.Fatal("a bad regular expression was accepted")
	}
}

// report is a ginkgo JSON report cut down to what ReadReport reads.
const report = `[{"SpecReports": [
 {"LeafNodeType": "SynchronizedBeforeSuite", "State": "passed"},
 {"ContainerHierarchyTexts": ["[sig-node] Pods"], "LeafNodeType": "It", "LeafNodeText": "a [Conformance]", "State": "passed", "RunTime": 2500000000},
 {"ContainerHierarchyTexts": ["[sig-node] Pods", "inner"], "LeafNodeType": "It", "LeafNodeText": "b", "State": "failed", "RunTime": 1000000000,
  "Failure": {"Message": "timed out waiting\nmore detail"}},
 {"ContainerHierarchyTexts": ["[sig-x]"], "LeafNodeType": "It", "LeafNodeText": "filtered", "State": "skipped"},
 {"ContainerHierarchyTexts": ["[sig-x]"], "LeafNodeType": "It", "LeafNodeText": "skipped at run time", "State": "skipped", "Failure": {"Message": "Only supported for providers [gce]"}}
]}]`

func TestParseReport(t *testing.T) {
	t.Run("selected names", func(t *testing.T) {
		got, err := parseReport(strings.NewReader(report), []string{"[sig-node] Pods inner b", "[sig-node] Pods a [Conformance]", "[sig-y] missing"})
		if err != nil {
			t.Fatal(err)
		}
		want := []Result{
			{Name: "[sig-node] Pods inner b", State: "failed", Runtime: time.Second, Message: "timed out waiting"},
			{Name: "[sig-node] Pods a [Conformance]", State: "passed", Runtime: 2500 * time.Millisecond},
			{Name: "[sig-y] missing", State: "not run"},
		}
		if len(got) != len(want) {
			t.Fatalf("got %+v", got)
		}
		for i := range want {
			if got[i].Name != want[i].Name || got[i].State != want[i].State || got[i].Runtime != want[i].Runtime ||
				(want[i].Message != "" && got[i].Message != want[i].Message) {
				t.Errorf("result %d: got %+v, want %+v", i, got[i], want[i])
			}
		}
		if c := Count(got); c != (Counts{Passed: 1, Failed: 2}) {
			t.Errorf("counts %+v", c)
		}
	})
	t.Run("no names: what ran", func(t *testing.T) {
		got, err := parseReport(strings.NewReader(report), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range got {
			names = append(names, r.Name)
		}
		if strings.Join(names, "|") != "[sig-node] Pods a [Conformance]|[sig-node] Pods inner b|[sig-x] skipped at run time" {
			t.Fatalf("got %q", names)
		}
	})
}

func TestWriteTableEndsWithTheTotals(t *testing.T) {
	var b strings.Builder
	WriteTable(&b, []Result{{Name: "b", State: "failed", Message: "boom"}, {Name: "a", State: "passed"}, {Name: "c", State: "skipped", Message: "why"}})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if last := lines[len(lines)-1]; last != "1 passed, 1 failed" {
		t.Fatalf("last line %q; table:\n%s", last, b.String())
	}
	if !strings.HasPrefix(lines[0], "passed") || !strings.Contains(b.String(), "boom") {
		t.Fatalf("table:\n%s", b.String())
	}
}

func TestWriteJUnit(t *testing.T) {
	results := []Result{
		{Name: "b <x>", State: "failed", Runtime: 2 * time.Second, Message: `expected "1" & got 2`},
		{Name: "a", State: "passed", Runtime: 1500 * time.Millisecond},
		{Name: "c", State: "not run", Message: "not in the report"},
		{Name: "d", State: "skipped", Message: "why"},
	}
	var b strings.Builder
	if err := WriteJUnit(&b, "conformance against actorlet", results, 90*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`<testsuite name="conformance against actorlet" tests="4" failures="2" skipped="1" time="90.0">`,
		`<testcase name="a" status="passed" time="1.5"></testcase>`,
		`<testcase name="b &lt;x&gt;" status="failed" time="2.0">`,
		`<failure message="expected &#34;1&#34; &amp; got 2" type="failed"></failure>`,
		`<failure message="not in the report" type="not run"></failure>`,
		`<skipped message="why"></skipped>`,
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %s in:\n%s", want, b.String())
		}
	}
	var parsed junitSuites
	if err := xml.Unmarshal([]byte(b.String()), &parsed); err != nil || len(parsed.Suite.Cases) != 4 || parsed.Suite.Cases[0].Name != "a" {
		t.Fatalf("parsed %+v, %v", parsed, err)
	}
}
