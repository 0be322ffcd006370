package ci

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// JUnit XML as CI systems read it (GitLab's artifacts:reports:junit,
// GitHub test-report actions, Jenkins): one test suite, one test case per
// key, a failure per regression.

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Classname string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the report as JUnit XML: a test case per compared key
// (classname the key's group, name its size and placement) failing on a
// regression, and a test case per key on one side only, skipped, or failing
// under RequireAll.
func WriteJUnit(w io.Writer, r *Report) error {
	o := r.Options
	s := junitSuite{Name: "perf gate (" + o.Metric.String() + ")", Properties: []junitProperty{
		{"metric", o.Metric.String()}, {"unit", Unit(o.Metric, o.Normalize)},
		{"thresholds", o.Thresholds.String()}, {"normalize", o.Normalize.String()},
		{"alpha", fmt.Sprint(o.Alpha)}, {"outcome", verdictLine(r)},
	}}
	for _, c := range r.Comparisons {
		tc := junitCase{Classname: c.Key.Group(), Name: c.Key.Point(), Time: "0"}
		detail := fmt.Sprintf("%s: baseline %s, candidate %s %s (%s), change %s, limit %s, %g%% CI %s, p %s, %s",
			c.Verdict, num(c.Base.Center), num(c.Cand.Center), Unit(o.Metric, o.Normalize), o.Metric,
			change(c.Delta()), limit(c, o.Metric), 100*o.Confidence, interval(c), pValue(c), samples(c))
		if len(c.Notes) > 0 {
			detail += "\n" + strings.Join(c.Notes, "\n")
		}
		if c.Verdict == Regression {
			s.Failures++
			tc.Failure = &junitMessage{Type: "regression", Text: detail,
				Message: fmt.Sprintf("%s %s beyond the limit %s", o.Metric, change(c.Delta()), limit(c, o.Metric))}
		} else {
			tc.SystemOut = detail
		}
		s.Cases = append(s.Cases, tc)
	}
	missing := func(what string, keys []Key) {
		for _, k := range keys {
			tc := junitCase{Classname: k.Group(), Name: k.Point(), Time: "0"}
			msg := &junitMessage{Message: "only in the " + what}
			if o.RequireAll {
				msg.Type = "missing"
				msg.Text = "--require-all: every key must be on both sides"
				tc.Failure = msg
				s.Failures++
			} else {
				tc.Skipped = msg
				s.Skipped++
			}
			s.Cases = append(s.Cases, tc)
		}
	}
	missing("baseline", r.OnlyBaseline)
	missing("candidate", r.OnlyCandidate)
	s.Tests = len(s.Cases)
	doc := junitSuites{Name: "perf gate", Tests: s.Tests, Failures: s.Failures, Skipped: s.Skipped, Suites: []junitSuite{s}}
	out, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s%s\n", xml.Header, out)
	return err
}
