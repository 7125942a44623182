// Package docs holds the tests that keep the documentation usable: every
// relative link leads somewhere, the pages stay within the lengths issue 43
// set, and no page names a past round of work (git keeps the history).
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"cloud2mqtt/internal/testkit"
)

// root is the repository, seen from this package's directory.
const root = ".."

// lineLimits are the most lines each page may have: a reader scans them.
var lineLimits = map[string]int{
	"README.md":            300,
	"docs/architecture.md": 200,
	"docs/benchmarks.md":   250,
}

// pastWork are the ways a page names a past round of work instead of what
// holds today.
var pastWork = []*regexp.Regexp{
	regexp.MustCompile(`(?i)\bsession \d+`),
	regexp.MustCompile(`(?i)\bLead, session`),
	regexp.MustCompile(`\bh\d{1,3}[a-z]{3,}\d*\b`), // internal names: h20words, h31lan, h23lan2
	regexp.MustCompile(`(?i)\b(round|phase) \d+\b`),
	regexp.MustCompile(`(?i)\brounds? of (work|review)`),
	regexp.MustCompile(`(?i)\b(this|last|previous|next|a|the) round\b`),
}

// pages are the documents readers are sent to: README.md, docs/*.md and
// each README under deploy/, as paths relative to the repository.
func pages(t *testing.T) []string {
	t.Helper()
	out := []string{"README.md"}
	md, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range md {
		out = append(out, rel(t, p))
	}
	err = filepath.WalkDir(filepath.Join(root, "deploy"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasPrefix(d.Name(), "README") {
			out = append(out, rel(t, p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func rel(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.Rel(root, p)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.ToSlash(r)
}

func read(t *testing.T, page string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(page)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestLinksResolve: every relative link of every page names a file or
// directory that exists, and a #fragment names a heading of the page it
// points to.
func TestLinksResolve(t *testing.T) {
	for _, page := range pages(t) {
		t.Run(page, func(t *testing.T) {
			for _, l := range links(read(t, page)) {
				if isExternal(l) {
					continue
				}
				target, frag, _ := strings.Cut(l, "#")
				file := page
				if target != "" {
					file = filepath.ToSlash(filepath.Join(filepath.Dir(page), target))
				}
				if strings.HasPrefix(file, "../") {
					t.Errorf("link %q leaves the repository", l)
					continue
				}
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(file))); err != nil {
					t.Errorf("link %q: %s does not exist", l, file)
					continue
				}
				if frag == "" || !strings.HasSuffix(file, ".md") {
					continue
				}
				if !anchors(read(t, file))[frag] {
					t.Errorf("link %q: %s has no heading #%s", l, file, frag)
				}
			}
		})
	}
}

// TestPagesWithinTheirLength: the line limits of issue 43.
func TestPagesWithinTheirLength(t *testing.T) {
	for page, limit := range lineLimits {
		if n := strings.Count(read(t, page), "\n"); n > limit {
			t.Errorf("%s has %d lines; at most %d (a reader scans it: move detail to a page of its own)", page, n, limit)
		}
	}
}

// TestNoPastRoundsOfWork: pages say what holds today, not which round of
// work made it so.
func TestNoPastRoundsOfWork(t *testing.T) {
	for _, page := range pages(t) {
		for i, line := range strings.Split(read(t, page), "\n") {
			for _, re := range pastWork {
				if m := re.FindString(line); m != "" {
					t.Errorf("%s:%d names a past round of work (%q): say what holds today; git keeps the history", page, i+1, m)
				}
			}
		}
	}
}

var (
	linkRE    = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeRE    = regexp.MustCompile("`[^`]*`")
	headingRE = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
)

// links are the link targets of a Markdown text, outside code.
func links(text string) []string {
	var out []string
	for _, line := range prose(text) {
		for _, m := range linkRE.FindAllStringSubmatch(codeRE.ReplaceAllString(line, ""), -1) {
			out = append(out, strings.Trim(m[1], "<>"))
		}
	}
	return out
}

// prose is the text's lines outside fenced and indented code blocks.
func prose(text string) []string {
	var out []string
	fenced, prevBlank, inIndented := false, true, false
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fenced = !fenced
			continue
		}
		blank := trimmed == ""
		indented := strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "\t")
		inIndented = indented && (prevBlank || inIndented) && !blank
		if !fenced && !inIndented {
			out = append(out, line)
		}
		if !inIndented || blank {
			prevBlank = blank
		}
	}
	return out
}

// anchors are the fragments GitHub gives the headings of a Markdown text.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range prose(text) {
		m := headingRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		s := testkit.Anchor(m[1])
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

func isExternal(link string) bool {
	for _, p := range []string{"http://", "https://", "mailto:"} {
		if strings.HasPrefix(link, p) {
			return true
		}
	}
	return false
}

// TestAnchor holds testkit.Anchor to GitHub's anchors of headings these pages use.
func TestAnchor(t *testing.T) {
	for heading, want := range map[string]string{
		"Why is my light not local?": "why-is-my-light-not-local",
		"`warn quota`":               "warn-quota",
		"The API, for scripts":       "the-api-for-scripts",
		"Home Assistant app":         "home-assistant-app",
		"What goes over the LAN":     "what-goes-over-the-lan",
	} {
		if got := testkit.Anchor(heading); got != want {
			t.Errorf("Anchor(%q) = %q, want %q", heading, got, want)
		}
	}
}
