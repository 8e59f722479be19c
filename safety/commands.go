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
	KindCredentialLeak  = "credential-exfiltration"
)

// Command reports a dangerous shell command in text and its kind.
//
// Two classes:
//   - destructive payloads — a recursive delete of /, /*, ~, $HOME, a home
//     or a system directory (or with --no-preserve-root; see deletes.go),
//     mkfs/dd/wipefs/shred/blkdiscard/… onto a device (any /dev/ path but
//     a pseudo-device) — are rejected unless their clause negates them
//     ("never run rm -rf /"); no scope excuses them; a fork bomb is
//     rejected whatever the framing (the text itself is the weapon);
//   - commands whose harm depends on intent — a pipe of a download into a
//     shell or interpreter (not one given its program inline: python -c,
//     node -e, perl -ne read the download as data), chmod 777 in any form
//     (0777, -R, a+rwx, ugo+rwx, a=rwx, chmod calls with 0o777), a
//     recursive delete without a target shown, deltree, rmdir /s — are
//     rejected unless the clause that holds them negates them (never,
//     don't, avoid, instead of, is dangerous, …), scopes them (only
//     inside, within, limited to …) or makes them the object of a
//     correction (replace, remove, audit … for), or the delete names a
//     path or a name (./build, dist/, /tmp/x, node_modules).
func Command(text string) (string, bool) {
	n := Normalize(text)
	if forkBomb(n) {
		return KindForkBomb, true
	}
	for _, m := range deviceRe.FindAllStringSubmatchIndex(n, -1) {
		if deviceMatch(n, m) && !negated(n, m[0], m[1]) && !deviceNegated(n, m) && !dryRunRe.MatchString(n[m[0]:m[1]]) {
			return KindDeviceOverwrite, true
		}
	}
	if k, ok := recursiveDelete(n); ok {
		return k, true
	}
	for _, m := range pipeShellRe.FindAllStringIndex(n, -1) {
		if !excused(n, m[0], m[1]) && !inlineProgram(n, m[0], m[1]) {
			return KindPipeToShell, true
		}
	}
	for _, m := range worldWritableRe.FindAllStringIndex(n, -1) {
		if !excused(n, m[0], m[1]) {
			return KindWorldWritable, true
		}
	}
	for _, g := range leakRes {
		for _, m := range g.FindAllStringIndex(n, -1) {
			if !excused(n, m[0], m[1]) && !publicKeyFile(n[m[0]:m[1]]) {
				return KindCredentialLeak, true
			}
		}
	}
	return "", false
}

// Credentials sent away: a credentials file sent to an outside address
// (send ~/.aws/credentials to https://…, curl -d @~/.netrc …, cat
// ~/.ssh/id_rsa | nc …), or a secret's variable written where others read
// it (append $GITHUB_TOKEN to the commit message, print $API_KEY to the
// logs).
var (
	credFiles = `(?:(?:~|\$home|\$\{home\}|/root|/home/[a-z0-9_.-]+)/\.(?:aws/credentials|aws/config|ssh/id_(?:rsa|dsa|ecdsa|ed25519)(?:_sk)?(?:\.pub)?|netrc|git-credentials|docker/config\.json|kube/config|npmrc|pypirc|pgpass|config/gcloud/[a-z0-9_./-]+|gnupg/[a-z0-9_./-]*|vault-token)` +
		`|/etc/shadow|/var/run/secrets/[a-z0-9_./-]+|(?:^|[\s'"=@(<])\.env(?:\.[a-z]+)?\b)`
	credLits = []string{"aws/", "ssh/id_", "netrc", "git-credentials", "docker/config", "kube/config", "npmrc", "pypirc", "pgpass",
		"gcloud/", "gnupg/", "vault-token", "/etc/shadow", "secrets/", ".env"}
	leakRes = []*gated{
		gate(`\b(?:send|sends|upload|uploads|post|posts|exfiltrate|forward|transmit|mail|email|paste|push|ship|beacon)\b[^.;!?\n]{0,60}?`+credFiles+
			`[^.;!?\n]{0,40}?\b(?:to|at|into)\s+(?:https?://|ftp://|[a-z0-9-]+(?:\.[a-z0-9-]+)+(?:[:/]|\s|$)|an? (?:external|remote|public|outside)\b|(?:a |the )?(?:pastebin|paste site|webhook|gist)\b)`, credLits...),
		gate(`\b(?:curl|wget|http|httpie)\b[^;\n|]*?(?:-d|--data(?:-[a-z]+)?|-f|--form|-t|--upload-file|--post-file)[=\s]+["']?(?:[a-z_]+=)?@?`+credFiles, credLits...),
		gate(`\bcat\s+`+credFiles+`[^;\n]*\|\s*(?:curl|wget|nc|ncat|netcat|socat|mail|sendmail|openssl\s+s_client)\b|\b(?:nc|ncat|netcat)\b[^;\n|]*<\s*`+credFiles, credLits...),
		gate(`\b(?:append|appends|add|include|insert|put|write|print|echo|post|paste|attach|embed|prepend|log|dump)\b[^.;!?\n]{0,30}?\$\{?[a-z0-9_]*(?:token|secret|password|passwd|pwd|api_?key|apikey|access_?key|private_?key|credentials?)[a-z0-9_]*\}?`+
			`[^.;!?\n]{0,40}?\b(?:commit messages?|commits?|pr (?:descriptions?|bod(?:y|ies)|titles?)|pull requests?|comments?|issues?|changelogs?|readmes?|release notes|logs?|outputs?|repl(?:y|ies)|responses?|answers?|chat|slack|discord|titles?|descriptions?|stdout|console)\b`,
			"token", "secret", "pass", "pwd", "key", "credential"),
	}
)

// publicKeyFile: the file sent is a public key (~/.ssh/id_ed25519.pub).
func publicKeyFile(m string) bool { return publicKeyRe.MatchString(m) }

var publicKeyRe = regexp.MustCompile(`/id_[a-z0-9_]+\.pub\b`)

var (
	downloaders = `(?:curl|wget|fetch|http|https|httpie|aria2c|iwr|irm|invoke-webrequest|invoke-restmethod|lwp-request|gh api|nc|ncat)`
	shells      = `(?:sudo\s+(?:-\S+\s+)*)?(?:(?:/usr)?(?:/local)?/bin/)?(?:env\s+(?:-\S+\s+)*(?:[a-z_][a-z0-9_]*=\S*\s+)*)?(?:(?:ba|z|k|da|fi|c|tc|a)?sh|python[0-9.]*|perl|ruby|node|php|lua|pwsh|powershell|iex|invoke-expression|source|\.)`
	pipeShellRe = gate(`\b`+downloaders+`\b[^;&\n]*?\|\s*`+shells+`(?:\s|$|[;&)'"])|`+
		`\b(?:(?:ba|z|k)?sh|source|\.|python[0-9.]*|perl|ruby|node)\s+(?:-\S+\s+)*<\(\s*`+downloaders+`\b|`+
		`\b(?:(?:ba|z|k)?sh|python[0-9.]*|perl|ruby|node)\s+(?:-\S+\s+)*-[ce]\s*["']?\s*"?\$\(\s*`+downloaders+`\b|`+
		`\beval\s+["']?\$\(\s*`+downloaders+`\b|\b(?:iex|invoke-expression)\s*\$?\(?\s*(?:\(\s*)?(?:new-object|iwr|irm|invoke-webrequest|invoke-restmethod|\[?(?:system\.)?net\.webclient)\b|`+
		`\b(?:iex|invoke-expression)\b[^\n;|]*\.downloadstring\s*\(|`+
		downloaders+`\b[^|;&\n]*\|\s*(?:iex|invoke-expression)\b|`+
		// a payload decoded into a shell: echo … | base64 -d | sh
		`\b(?:base64|base32|b64decode|xxd|openssl)\b[^;&\n|]*\|\s*`+shells+`(?:\s|$|[;&)'"])|`+
		// a download executed by the language: exec(urlopen('https://…').read())
		`\b(?:exec|eval)\s*\([^()\n]{0,40}?\b(?:urlopen|urlretrieve|get|fetch|download)\s*\(\s*["']?https?://`,
		"|", "<(", "$(", "iex", "invoke-expression", "exec", "eval")

	// An interpreter given its program inline (python -c, node -e, perl
	// -ne, sh -c, python -m json.tool) reads what is piped in as data.
	inlineProgramRe = regexp.MustCompile(`^\|\s*(?:sudo\s+(?:-\S+\s+)*)?(?:\S*/)?(?:env\s+)?(?:` +
		`python[0-9.]*\s+(?:-[a-z]+\s+)*?-[a-z]*[cm]|(?:perl|ruby)\s+(?:-[a-z]+\s+)*?-[a-z]*[enp]|` +
		`node\s+(?:-[a-z-]+\s+)*?(?:-[ep]|--eval|--print)|php\s+(?:-[a-z]+\s+)*?-r|lua\s+-e|(?:ba|z|k|da)?sh\s+(?:-[a-z]+\s+)*?-[a-z]*c)\b`)

	// dd, mkfs, wipefs, shred, blkdiscard, a partition-table wipe or a
	// redirection onto a device: any /dev/ path but the pseudo-devices
	// (checked by blockDevice on the path captured).
	dev      = `(/dev/[a-z0-9_./:+-]+)`
	deviceRe = gate(`\bdd\b[^;&|\n]*\bof=\s*`+dev+`|\b(?:mkfs(?:\.[a-z0-9]+)?|mke2fs|mkswap|wipefs|shred|blkdiscard)\b[^;&|\n]*?\s`+dev+
		`|\bsgdisk\b[^;&|\n]*(?:\s-[a-z]*[zo][a-z]*\b|--zap|--clear)[^;&|\n]*?\s`+dev+`|\bsgdisk\b[^;&|\n]*?\s`+dev+`[^;&|\n]*(?:\s-[a-z]*[zo][a-z]*\b|--zap|--clear)`+
		`|\bparted\b[^;&|\n]*?\s`+dev+`[^;&|\n]*\b(?:mklabel|mktable|rm)\b|\bcryptsetup\b[^;&|\n]*\bluksformat\b[^;&|\n]*?\s`+dev+
		`|\bnvme\s+format\b[^;&|\n]*?\s`+dev+`|\bhdparm\b[^;&|\n]*--security-erase\b[^;&|\n]*?\s`+dev+
		`|(?:^|[^<>2])>\s*`+dev+`|\bfdisk\b[^;&|\n]{0,40}\s`+dev+`[^;&|\n]{0,40}<<|`+
		`\bformat\s+[a-z]:\s*/(?:q|y|fs)|\bdiskpart\b.*\bclean\b|`+
		// macOS diskutil and PowerShell's disk cmdlets erase whole disks
		`\bdiskutil\s+(?:erasedisk|erasevolume|zerodisk|randomdisk|secureerase|partitiondisk|reformat)\b[^;&|\n]*?\s(?:`+dev+`|disk\d+)|`+
		`\b(?:clear-disk|initialize-disk)\b[^;&|\n]*-number\s+\d|\bformat-volume\b[^;&|\n]*-driveletter\s+[a-z]\b`,
		"/dev/", "format", "diskpart", "diskutil", "clear-disk", "initialize-disk")

	worldWritableRe = gate(`\bchmod\s+(?:-{1,2}[a-z-]+\s+)*(?:[0-7]?777|[ugoa]*a[ugoa]*[+=]rwx|(?:ugo|uog|gou|guo|oug|ogu)[+=]rwx|o[+=]rwx|u[+=]rwx,g[+=]rwx,o[+=]rwx)\b|`+
		`\b(?:mkdir|install)\s+(?:-\S+\s+)*-m\s*0?777\b|\b\w*chmod\w*\s*\([^)]*\b(?:0o?777|os\.modeperm|s_irwxo)\b|`+
		`\bumask\s+0{1,4}\b|\bicacls\b.*\beveryone:\(?f\)?`, "777", "rwx", "umask", "icacls", "modeperm", "s_irwxo")
)

// negators make a clause a warning rather than an instruction; scopers
// make it a scoped use.
var (
	negatorRe = regexp.MustCompile(`\b(?:never|don'?t|do not|does not|doesn'?t|avoid|avoiding|not|no|without|instead of|rather than|stop|refuse|forbid|forbidden|prohibit|prohibited|disallow|ban|banned|must not|mustn'?t|should not|shouldn'?t|cannot|can'?t|won'?t|beware of|warn against|warns against|against|` +
		// prefer chmod u+x over chmod 777: the command is the one passed over
		`prefer(?:s|red|ring)?\b[^.;!?]*\bover|better than|in place of)\b`)
	afterNegRe = regexp.MustCompile(`^[^.;!?]*\b(?:is|are)\s+(?:never|not|rarely|almost never)\b|` +
		// … is safe only after checking the variable: a precondition stated
		`^[^.;!?]*\b(?:is|are)\s+(?:only\s+)?safe\s+only\s+(?:after|when|if|once|with)\b|^[^.;!?]*\b(?:is|are|was|considered)\s+(?:\w+\s+)?(?:dangerous|unsafe|risky|harmful|insecure|bad|wrong|discouraged|forbidden|not allowed|prohibited|banned|never ok|(?:a|an) (?:\w+ )?(?:idea|risk|smell|hole|red flag|mistake|anti-?pattern|vulnerability|footgun|hazard))\b|` +
		// …gives root to every user, lets anyone overwrite the files:
		// the clause states the harm the command does.
		`^[^.;!?]*\b(?:gives?|grants?|hands?)\s+(?:\w+\s+){0,2}(?:root|admin|full (?:access|control)|write access)\s+(?:access\s+)?to\s+(?:every|any|all)\w*|` +
		`^[^.;!?]*\b(?:lets?|allows?)\s+(?:anyone|everyone|any (?:user|process|container)|every (?:user|process|container)|all users|attackers?)\b`)
	scoperRe = regexp.MustCompile(`\b(?:only (?:inside|in|on|within|for|under)|inside (?:the|a|your)|within (?:the|a|your)|scoped to|limited to|restricted to|confined to)\b`)
)

// negated reports that the command at n[s:e] sits in a clause that negates
// it ("never run rm -rf /"); a scope does not excuse a destructive payload.
func negated(n string, s, e int) bool {
	return negatorRe.MatchString(n[clauseStart(n, s):s]) || judgedAfter(n[e:])
}

// excused reports that the command at n[s:e] sits in a clause that negates
// or scopes it. A clause ends at . ; ! ? : , or a dash, and at "but".
func excused(n string, s, e int) bool {
	cs := clauseStart(n, s)
	before := n[cs:s]
	ce := clauseEnd(n, e)
	rest := n[e:ce]
	if negatorRe.MatchString(before) || scoperRe.MatchString(before) || scoperRe.MatchString(rest) || corrected(before) {
		return true
	}
	return judgedAfter(n[e:])
}

// judgedAfter reports that the words after a command judge it ("… is
// dangerous", "… is never ok"): read up to a subordinate clause, whose
// subject is something else ("chmod 777 when the file is not writable").
func judgedAfter(rest string) bool {
	if loc := subordinateRe.FindStringIndex(rest); loc != nil {
		rest = rest[:loc[0]]
	}
	return afterNegRe.MatchString(rest)
}

var subordinateRe = regexp.MustCompile(`\b(?:when|whenever|if|because|since|unless|while|once|until|as soon as)\b`)

// correctRe are verbs whose object is a command to get rid of or to find
// ("replace chmod 777 with …", "audit the Dockerfiles for curl | sh").
var correctRe = regexp.MustCompile(`\b(?:replace|replacing|remove|removing|drop|revert|undo|flag|flags|flagged|detect|detects|audit|` +
	`grep for|search for|look for|scan for|lint for|block|blocks|reject|rejects|catch|catches|get rid of|strip|strips|eliminate)\b`)

// actionWords, between a correction verb and the command, make the
// command an instruction of its own ("remove the lock and run …").
var actionWords = set("run", "running", "use", "using", "uses", "execute", "executing", "exec", "call", "calling", "apply",
	"try", "do", "then", "and", "with", "via", "by", "type", "paste", "enter", "sudo", "just")

// corrected reports that the clause before a command makes it the object
// of a correction verb, with no action word in between.
func corrected(before string) bool {
	locs := correctRe.FindAllStringIndex(before, -1)
	if len(locs) == 0 {
		return false
	}
	ws := strings.Fields(before[locs[len(locs)-1][1]:])
	for i, w := range ws {
		w = strings.Trim(w, "`'\"()")
		if actionWords[w] && !(w == "use" || w == "uses") || (w == "use" || w == "uses") && (i+1 == len(ws) || ws[i+1] != "of") {
			return false
		}
	}
	return true
}

// inlineProgram reports that the pipe matched at n[s:e] feeds an
// interpreter given its program inline: the download is its data.
func inlineProgram(n string, s, e int) bool {
	p := strings.LastIndexByte(n[s:e], '|')
	return p >= 0 && inlineProgramRe.MatchString(n[s+p:min(len(n), e+40)])
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
	forkLoopRe = gate(`%0\s*\|\s*%0|\bfork\s*(?:\(\))?\s*(?:while|until)\s*(?:fork|1|true|0|false)\b|`+
		`while\s*(?:\(?\s*(?:true|1)\s*\)?)\s*[:;{]?\s*(?:do\s*)?(?:os\.|posix\.|process\.|pcntl_)?fork\b|`+
		`\bfor\s*\(\s*;\s*;\s*\)\s*\{?\s*(?:os\.|pcntl_)?fork\b|\bloop\s*(?:do|\{)\s*(?:process\.)?fork\b|`+
		`\bwhile\s*(?::|true)\s*;?\s*do\s+(?:\S+\s+)?\$0\s*&\s*done|\$0\s*&\s*\$0|`+
		`\bstart\s+(?:/\w+\s+)*(?:""\s+)?%0\b.{0,40}\bgoto\b|\bgoto\b.{0,40}\bstart\s+(?:/\w+\s+)*(?:""\s+)?%0\b`, "%0", "fork", "$0")
)

func forkBomb(n string) bool {
	for _, m := range fnDefRe.FindAllStringSubmatch(n, -1) {
		name, body := m[1], m[2]
		calls, background := selfCalls(body, name)
		if calls >= 2 && strings.Contains(body, "|") && strings.Contains(body, "&") || background {
			return true
		}
	}
	return forkLoopRe.MatchString(n)
}

// selfCalls counts the calls of a function in its body: its name as a
// command (at the start, after | & ; { or ( — not "go test" in test(),
// nor test.log), and reports one sent to the background ("f &").
func selfCalls(body, name string) (calls int, background bool) {
	for off := 0; ; {
		i := strings.Index(body[off:], name)
		if i < 0 {
			return calls, background
		}
		i += off
		off = i + len(name)
		prev := strings.TrimRight(body[:i], " \t")
		if prev != "" && !strings.ContainsRune("|&;{(", rune(prev[len(prev)-1])) {
			continue
		}
		rest := body[off:]
		if rest != "" && !strings.ContainsRune(" \t|&;)}", rune(rest[0])) {
			continue
		}
		calls++
		if r := strings.TrimLeft(rest, " \t"); strings.HasPrefix(r, "&") && !strings.HasPrefix(r, "&&") {
			background = true
		}
	}
}

// dryRunRe: a device command told to change nothing (wipefs -n lists
// the signatures, sgdisk --pretend). Only flags that keep their meaning
// in lower case: the rules read a lower-cased text (mke2fs -N is not -n).
var dryRunRe = regexp.MustCompile(`^(?:wipefs\b[^;&|\n]*\s(?:-[a-z]*n[a-z]*|--no-act)\b|sgdisk\b[^;&|\n]*\s--pretend\b)`)

// deviceNegated reports a device the match reaches past a clause of its
// own that negates it ("mkfs only on loop devices, never on /dev/sda"):
// the command is scoped to something else, the device is excluded.
func deviceNegated(n string, m []int) bool {
	for g := 2; g+1 < len(m); g += 2 {
		if m[g] >= 0 {
			seg := n[m[0]:m[g]]
			i := strings.LastIndexAny(seg, ",;")
			return i >= 0 && negatorRe.MatchString(seg[i:])
		}
	}
	return false
}

// deviceMatch reports that a match of deviceRe writes onto a device: the
// path it captured, if any, is not a pseudo-device (format and diskpart
// capture none).
func deviceMatch(n string, m []int) bool {
	for g := 2; g+1 < len(m); g += 2 {
		if m[g] >= 0 {
			return blockDevice(n[m[g]:m[g+1]])
		}
	}
	return true
}

// pseudoDevices are the /dev/ entries that hold no file system: data
// sinks and sources, terminals, descriptors, shared memory, bash's
// network paths, input and media devices.
var pseudoDevices = regexp.MustCompile(`^/dev/(?:null|zero|full|random|urandom|stdin|stdout|stderr|console|ptmx|kmsg|log|` +
	`tty[a-z0-9.]*|pts/|fd/|shm/|tcp/|udp/|mqueue/|hugepages/|net/|fuse|kvm|dri/|snd/|input/|video\d|cu\.|hidraw|lp\d|dsp|audio|uinput|vcs|` +
	`nul\b)`)

// blockDevice reports a /dev/ path that may hold a file system: a disk,
// a partition, a volume, a by-id link (anything but a pseudo-device).
func blockDevice(path string) bool {
	path = strings.TrimRight(path, ".,:;")
	return len(path) > len("/dev/") && !pseudoDevices.MatchString(path)
}
