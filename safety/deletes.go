package safety

import (
	"regexp"
	"strings"
)

// Recursive deletes: rm -r, find … -delete, Remove-Item -Recurse, del /s,
// rmdir /s, deltree. Their targets are read one by one: a system or home
// target is a destructive payload, a wildcard or a missing target shows no
// scope, a path is a scoped delete.

var (
	rmRe = gate(`\b(?:rm|/bin/rm)\s+((?:-{1,2}[a-z-]+\s*)+)\s*([^;&|\n]*)`, "rm")
	// find <target> … -delete / -exec rm.
	findDeleteRe = gate(`\bfind\s+(\S+)[^;|&\n]*?\s(?:-delete\b|-exec\s+(?:sudo\s+)?(?:/bin/)?rm\s)`, "find")
	// Remove-Item (or its alias ri) with its arguments.
	removeItemRe = gate(`\b(?:remove-item|ri)\s+([^;|\n]*)`, "remove-item", "ri")
	// del or erase with /s, its flags and first target.
	delRe = gate(`\b(?:del|erase)\s+((?:/[a-z]\s+)*/s\b(?:\s+/[a-z])*)\s*(\S+)?`, "del", "erase")
	// The other recursive deletes: their target is not parsed.
	winDeleteRe = gate(`\bdeltree\b|\b(?:rmdir|rd)\s+(?:/[a-z]\s+)*/s\b`, "deltree", "rmdir", "rd")
)

// dangerousTargets are delete targets that destroy a system or a home
// (quotes removed): /, /*, ~, ~user, $HOME and ${HOME…} with or without a
// trailing / or /*, /home/<user>, a drive root, a system directory.
var dangerousTargets = regexp.MustCompile(`^(?:/|/\*|/\.\*|/\.\.|~[a-z0-9_-]*/?|~/\*|~/\.\*|` +
	`\$\{?home(?::?[-?=][^}]*)?\}?(?:/|/\*|/\.\*)?|%userprofile%\\?\*?|[a-z]:\\?\*?|` +
	`/(?:bin|boot|dev|etc|home|lib|lib32|lib64|opt|proc|root|sbin|srv|sys|usr|var|users|system|library|applications|private|mnt|media|snap)/?\*?|` +
	`/(?:home|users)/[^/\s*]+/?\*?)$`)

// winDangerousTargets are the same for Windows: a drive root, the system
// and user folders, the profile variables.
var winDangerousTargets = regexp.MustCompile(`^(?:[a-z]:\\?\*?(?:\.\*)?|[a-z]:\\(?:windows|users|program files|programdata)\\?\*?|` +
	`\$env:(?:userprofile|systemroot|windir|systemdrive|homedrive|homepath|programfiles|appdata|localappdata)\\?\*?|` +
	`\$home\\?\*?|~\\?\*?|\\\*?|%(?:userprofile|systemroot|windir|systemdrive|homepath)%\\?\*?)$`)

// riskyTargets are wildcard targets: dangerous unless negated or scoped.
var riskyTargets = regexp.MustCompile(`^(?:\*|\.\*|\.|\./|\./\*|\.\.|\.\./|\.\./\*|\*\.\*|\$\{?[a-z_]+\}?/\*)$`)

// proseWords end the arguments of a command written in a sentence ("rm -rf
// on the build folder": no target; "rm -rf build before packaging").
var proseWords = set("it", "them", "this", "that", "these", "those", "the", "a", "an", "and", "or", "to", "on", "in",
	"at", "for", "from", "with", "when", "if", "then", "before", "after", "everything", "anything", "all", "stuff",
	"things", "your", "my", "our", "their", "its", "whatever", "every", "any", "here", "there", "again", "now",
	"first", "instead", "as", "is", "was", "will", "can", "away", "recursively", "quickly", "fast", "carefully",
	"blindly", "whenever", "so", "but", "by", "of", "into", "onto", "over", "without", "only", "just", "once",
	"too", "also", "each", "files", "folders", "dirs", "directories", "everywhere", "afterwards", "regularly",
	"while", "until", "since", "because", "unless", "where", "which", "who", "what", "how", "you", "we", "i")

// unquote is a target without its quotes and trailing punctuation.
func unquote(t string) string {
	if strings.ContainsAny(t, "\"'`") {
		t = quotes.Replace(t)
	}
	return strings.TrimRight(t, ".,:;)")
}

var quotes = strings.NewReplacer(`"`, "", "'", "", "`", "")

// recursiveDelete finds a recursive delete: always dangerous on a system
// or home target or with --no-preserve-root; without a target shown, or
// on a wildcard, dangerous unless negated or scoped.
func recursiveDelete(n string) (string, bool) {
	if i := strings.Index(n, "--no-preserve-root"); i >= 0 && !negated(n, i, i+len("--no-preserve-root")) {
		return KindRecursiveDelete, true
	}
	for _, m := range rmRe.FindAllStringSubmatchIndex(n, -1) {
		if !recursiveFlags(n[m[2]:m[3]]) {
			continue
		}
		if rmTargetsBad(n, m[0], m[1], n[m[4]:m[5]]) {
			return KindRecursiveDelete, true
		}
	}
	for _, m := range findDeleteRe.FindAllStringSubmatchIndex(n, -1) {
		if dangerousTargets.MatchString(unquote(n[m[2]:m[3]])) && !excused(n, m[0], m[1]) {
			return KindRecursiveDelete, true
		}
	}
	for _, m := range removeItemRe.FindAllStringSubmatchIndex(n, -1) {
		args := strings.Fields(n[m[2]:m[3]])
		recurse, target := false, false
		for _, a := range args {
			switch a = unquote(a); {
			case a == "-r" || strings.HasPrefix(a, "-rec"):
				recurse = true
			case winDangerousTargets.MatchString(a):
				target = true
			}
		}
		if recurse && target && !negated(n, m[0], m[1]) {
			return KindRecursiveDelete, true
		}
	}
	for _, m := range delRe.FindAllStringSubmatchIndex(n, -1) {
		t := ""
		if m[4] >= 0 {
			t = unquote(n[m[4]:m[5]])
		}
		switch {
		case winDangerousTargets.MatchString(t):
			if !negated(n, m[0], m[1]) {
				return KindRecursiveDelete, true
			}
		case t == "" || proseWords[t] || riskyTargets.MatchString(t):
			if !excused(n, m[0], m[1]) {
				return KindRecursiveDelete, true
			}
		}
	}
	for _, m := range winDeleteRe.FindAllStringIndex(n, -1) {
		if !excused(n, m[0], m[1]) {
			return KindRecursiveDelete, true
		}
	}
	return "", false
}

// rmTargetsBad reads the arguments after rm's flags (n[s:e] is the match,
// args its arguments up to a shell separator): dangerous when one of them
// is a system or home target and the clause does not negate it; when none
// is shown (no argument, a word of prose first, a variable) or one is a
// wildcard, dangerous unless negated or scoped. A path (./build, dist/,
// /tmp/x) is a scoped delete; a bare name (dist, node_modules) shows no
// scope, as the reference validator holds ("Run rm -rf dist before every
// build" stays quarantined on restore).
func rmTargetsBad(n string, s, e int, args string) bool {
	shown, risky := false, false
	// The command ends where its words of prose start: what follows is
	// read as its clause ("rm -rf \"$DIR\" is safe only after …").
	argStart := e - len(args)
	rest := args
	for {
		a := strings.TrimLeft(rest, " \t")
		if a == "" {
			break
		}
		w := a
		if i := strings.IndexAny(a, " \t"); i >= 0 {
			w = a[:i]
		}
		at := argStart + len(args) - len(a)
		rest = a[len(w):]
		t := unquote(w)
		if proseWords[t] {
			e = at
			break
		}
		switch {
		case dangerousTargets.MatchString(t):
			return !negated(n, s, e)
		case riskyTargets.MatchString(t):
			risky = true
		case strings.Contains(t, "/"):
			shown = true
		}
	}
	return (risky || !shown) && !excused(n, s, e)
}

// recursiveFlags reports flags holding -r, -R or --recursive.
func recursiveFlags(flags string) bool {
	for _, f := range strings.Fields(flags) {
		switch {
		case strings.HasPrefix(f, "--"):
			if f == "--recursive" {
				return true
			}
		case strings.HasPrefix(f, "-"):
			if strings.ContainsAny(f[1:], "r") {
				return true
			}
		}
	}
	return false
}
