package safety

import (
	"regexp"
	"strings"
)

// Kinds of dangerous commands.
const (
	KindPipeToShell     = "pipe-to-shell"
	KindForkBomb        = "fork-bomb"
	KindDeviceOverwrite = "device-overwrite"
	KindRecursiveDelete = "recursive-delete"
	KindWorldWritable   = "world-writable-permissions"
)

// Command reports a dangerous shell command in text and its kind.
//
// Two classes:
//   - destructive payloads — a recursive delete of /, /*, ~, $HOME or a
//     system directory (or with --no-preserve-root), mkfs/dd/wipefs/shred
//     onto a device — are rejected unless their clause negates them ("never
//     run rm -rf /"); no scope excuses them; a fork bomb is rejected
//     whatever the framing (the text itself is the weapon);
//   - commands whose harm depends on intent — a pipe of a download into a
//     shell or interpreter, chmod 777 in any form (0777, -R, a+rwx,
//     ugo+rwx, a=rwx), a recursive delete without a target, deltree,
//     rmdir /s — are rejected unless the clause that holds them negates
//     them (never, don't, avoid, instead of, is dangerous, …) or scopes
//     them (only inside, within, limited to …), or the delete names an
//     explicit path (./build, dist/, /tmp/x; a bare name shows no scope).
func Command(text string) (string, bool) {
	n := Normalize(text)
	if forkBomb(n) {
		return KindForkBomb, true
	}
	for _, m := range deviceRe.FindAllStringIndex(n, -1) {
		if !negated(n, m[0], m[1]) {
			return KindDeviceOverwrite, true
		}
	}
	if k, ok := recursiveDelete(n); ok {
		return k, true
	}
	for _, m := range pipeShellRe.FindAllStringIndex(n, -1) {
		if !excused(n, m[0], m[1]) && !jsonToolRe.MatchString(n[m[0]:min(len(n), m[1]+20)]) {
			return KindPipeToShell, true
		}
	}
	for _, m := range worldWritableRe.FindAllStringIndex(n, -1) {
		if !excused(n, m[0], m[1]) {
			return KindWorldWritable, true
		}
	}
	return "", false
}

var (
	downloaders = `(?:curl|wget|fetch|http|https|httpie|aria2c|iwr|irm|invoke-webrequest|invoke-restmethod|lwp-request|gh api|nc|ncat)`
	shells      = `(?:sudo\s+(?:-\S+\s+)*)?(?:(?:/usr)?(?:/local)?/bin/)?(?:env\s+)?(?:(?:ba|z|k|da|fi|c|tc|a)?sh|python[0-9.]*|perl|ruby|node|php|lua|pwsh|powershell|iex|invoke-expression|source|\.)`
	pipeShellRe = gate(`\b`+downloaders+`\b[^;&\n]*?\|\s*`+shells+`(?:\s|$|[;&)'"])|`+
		`\b(?:(?:ba|z|k)?sh|source|\.|python[0-9.]*|perl|ruby|node)\s+(?:-\S+\s+)*<\(\s*`+downloaders+`\b|`+
		`\b(?:(?:ba|z|k)?sh|python[0-9.]*|perl|ruby|node)\s+(?:-\S+\s+)*-[ce]\s*["']?\s*"?\$\(\s*`+downloaders+`\b|`+
		`\beval\s+["']?\$\(\s*`+downloaders+`\b|\biex\s*\(?\s*(?:\(\s*)?(?:new-object|iwr|irm|invoke-webrequest|invoke-restmethod)\b|`+
		downloaders+`\b[^|;&\n]*\|\s*(?:iex|invoke-expression)\b`, "|", "<(", "$(", "iex")

	// python -m json.tool reads JSON, it runs nothing.
	jsonToolRe = regexp.MustCompile(`\|\s*python[0-9.]*\s+-m\s*json\.tool\b`)

	// dd, mkfs, wipefs, shred, redirection or cp onto a block device.
	disk     = `/dev/(?:sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|disk\d|rdisk\d|mapper/|md\d|dm-\d|root\b|sr\d|loop\d|zram\d)`
	deviceRe = gate(`\bdd\b[^;&|\n]*\bof=\s*`+disk+`|\bmkfs(?:\.[a-z0-9]+)?\b[^;&|\n]*\s`+disk+
		`|\bmke2fs\b[^;&|\n]*\s`+disk+`|\bwipefs\b[^;&|\n]*\s`+disk+`|\bshred\b[^;&|\n]*\s`+disk+
		`|(?:^|[^<>2])>\s*`+disk+`|\bcat\b[^;&|\n]*>\s*`+disk+`|\bfdisk\b[^;&|\n]{0,40}\s`+disk+`[^;&|\n]{0,40}<<|`+
		`\bformat\s+[a-z]:\s*/(?:q|y|fs)|\bdiskpart\b.*\bclean\b`, "/dev/", "format", "diskpart")

	worldWritableRe = gate(`\bchmod\s+(?:-{1,2}[a-z-]+\s+)*(?:[0-7]?777|[ugoa]*a[ugoa]*[+=]rwx|(?:ugo|uog|gou|guo|oug|ogu)[+=]rwx|o[+=]rwx|u[+=]rwx,g[+=]rwx,o[+=]rwx)\b|`+
		`\b(?:mkdir|install)\s+(?:-\S+\s+)*-m\s*0?777\b|\bchmod\s*\([^)]*,\s*0o?777\s*\)|\bos\.chmod\([^)]*0o?777|\bumask\s+0{3,4}\b|\bicacls\b.*\beveryone:\(?f\)?`, "777", "rwx", "umask", "icacls")

	rmRe = gate(`\b(?:rm|/bin/rm)\s+((?:-{1,2}[a-z-]+\s*)+)\s*([^\s;&|]+)?`, "rm")
	// The other recursive deletes: their target is not parsed.
	winDeleteRe = gate(`\bdeltree\b|\b(?:rmdir|rd)\s+(?:/[a-z]\s+)*/s\b|\bremove-item\b[^;|\n]*-recurse\b[^;|\n]*-force\b[^;|\n]{0,30}\s(?:[a-z]:\\?\s*$|[a-z]:\\\s|\$env:userprofile|~|\\)|\bfind\s+/\s+(?:-\S+\s+\S+\s+)*-delete\b`, "deltree", "rmdir", "rd", "remove-item", "find")
)

// dangerousTargets are delete targets that destroy a system or a home.
var dangerousTargets = regexp.MustCompile(`^["']?(?:/|/\*|/\.\*|~|~/|~/\*|~/\.\*|\$home|\$\{home\}|\$home/|\$home/\*|\$\{home\}/\*|/\.\.|%userprofile%|[a-z]:\\?|` +
	`/(?:bin|boot|dev|etc|home|lib|lib32|lib64|opt|proc|root|sbin|srv|sys|usr|var|users|system|library|applications|private|mnt|media|snap)/?\*?)["']?$`)

// riskyTargets are wildcard targets: dangerous unless negated or scoped.
var riskyTargets = regexp.MustCompile(`^["']?(?:\*|\.\*|\.|\./|\./\*|\.\.|\.\./|\.\./\*|\$[a-z_]+/\*|"\$[a-z_]+"/\*)["']?$`)

// recursiveDelete finds rm with a recursive flag (or deltree, rmdir /s):
// always dangerous on a system or home target or with --no-preserve-root;
// without a target, dangerous unless negated or scoped.
func recursiveDelete(n string) (string, bool) {
	if i := strings.Index(n, "--no-preserve-root"); i >= 0 && !negated(n, i, i+len("--no-preserve-root")) {
		return KindRecursiveDelete, true
	}
	for _, m := range rmRe.FindAllStringSubmatchIndex(n, -1) {
		flags := n[m[2]:m[3]]
		if !recursiveFlags(flags) {
			continue
		}
		target := ""
		if m[4] >= 0 {
			target = n[m[4]:m[5]]
		}
		switch {
		case target != "" && dangerousTargets.MatchString(strings.TrimRight(target, ".,:")):
			if !negated(n, m[0], m[1]) {
				return KindRecursiveDelete, true
			}
		case !strings.Contains(target, "/") || riskyTargets.MatchString(strings.TrimRight(target, ",:;")):
			// No target, a word of prose, a bare name or a wildcard:
			// the scope is not shown.
			if !excused(n, m[0], m[1]) {
				return KindRecursiveDelete, true
			}
		}
		// An explicit path (./build, dist/, /tmp/x): scoped, passes.
	}
	for _, m := range winDeleteRe.FindAllStringIndex(n, -1) {
		if !excused(n, m[0], m[1]) {
			return KindRecursiveDelete, true
		}
	}
	return "", false
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

// negators make a clause a warning rather than an instruction; scopers
// make it a scoped use.
var (
	negatorRe  = regexp.MustCompile(`\b(?:never|don'?t|do not|does not|doesn'?t|avoid|avoiding|not|no|without|instead of|rather than|stop|refuse|forbid|forbidden|prohibit|prohibited|disallow|ban|banned|must not|mustn'?t|should not|shouldn'?t|cannot|can'?t|won'?t|beware of|warn against|warns against|against)\b`)
	afterNegRe = regexp.MustCompile(`^[^.;!?]*\b(?:is|are)\s+(?:never|not|rarely|almost never)\b|^[^.;!?]*\b(?:is|are|was|considered)\s+(?:\w+\s+)?(?:dangerous|unsafe|risky|harmful|insecure|bad|wrong|discouraged|forbidden|not allowed|prohibited|banned|never ok|(?:a|an) (?:\w+ )?(?:idea|risk|smell|hole|red flag|mistake|anti-?pattern|vulnerability|footgun|hazard))\b`)
	scoperRe   = regexp.MustCompile(`\b(?:only (?:inside|in|on|within|for|under)|inside (?:the|a|your)|within (?:the|a|your)|scoped to|limited to|restricted to|confined to)\b`)
)

// negated reports that the command at n[s:e] sits in a clause that negates
// it ("never run rm -rf /"); a scope does not excuse a destructive payload.
func negated(n string, s, e int) bool {
	return negatorRe.MatchString(n[clauseStart(n, s):s]) || afterNegRe.MatchString(n[e:])
}

// excused reports that the command at n[s:e] sits in a clause that negates
// or scopes it. A clause ends at . ; ! ? : , or a dash, and at "but".
func excused(n string, s, e int) bool {
	cs := clauseStart(n, s)
	before := n[cs:s]
	ce := clauseEnd(n, e)
	rest := n[e:ce]
	if negatorRe.MatchString(before) || scoperRe.MatchString(before) || scoperRe.MatchString(rest) {
		return true
	}
	return afterNegRe.MatchString(n[e:])
}

func clauseStart(n string, s int) int {
	i := strings.LastIndexAny(n[:s], ".;!?:,—\n")
	// A dot inside a word (./build, file.txt, 2.0) does not end a clause.
	for i >= 0 && n[i] == '.' && i+1 < len(n) && n[i+1] != ' ' {
		i = strings.LastIndexAny(n[:i], ".;!?:,—\n")
	}
	if b := strings.LastIndex(n[:s], " but "); b > i {
		return b + 5
	}
	return i + 1
}

func clauseEnd(n string, e int) int {
	for i := e; i < len(n); i++ {
		switch n[i] {
		case ';', '!', '?', '\n', ',':
			return i
		case '.':
			if i+1 == len(n) || n[i+1] == ' ' {
				return i
			}
		}
	}
	return len(n)
}

// forkBomb finds f(){ f|f& } in any function name (":" included), %0|%0,
// and fork-while-fork one-liners.
var (
	fnDefRe    = gate(`([a-z_:][a-z0-9_:]*)\s*\(\s*\)\s*\{([^}]{1,80})\}`, "{")
	forkLoopRe = gate(`%0\s*\|\s*%0|\bfork\s*(?:\(\))?\s*while\s*fork\b|while\s*(?:\(?\s*(?:true|1)\s*\)?)\s*[:;{]?\s*(?:do\s*)?(?:os\.)?fork\(\)|\bwhile\s*:\s*;?\s*do\s+\$0\s*&\s*done|\$0\s*&\s*\$0`, "%0", "fork", "$0")
)

func forkBomb(n string) bool {
	for _, m := range fnDefRe.FindAllStringSubmatch(n, -1) {
		name, body := m[1], m[2]
		if strings.Count(body, name) >= 2 && strings.Contains(body, "|") && strings.Contains(body, "&") {
			return true
		}
		if strings.Count(body, name) >= 1 && strings.Contains(body, "&") && strings.Contains(body, name+" &") {
			return true
		}
	}
	return forkLoopRe.MatchString(n)
}
