package safety

import (
	"regexp"
	"strings"
)

// lore's own credential rules. gitleaks' rules are tuned for source files
// and match full-length keys only; a lesson or an error message often
// holds a key in a shorter or older shape, a password inside a URL, or an
// assignment in prose. These rules cover those shapes. Each checks that
// its secret is not a placeholder (<token>, $API_KEY, ${X}, {{x}}, sk-...,
// xxxx, ****, your-key, changeme, example).

// keyBody is a run of key characters with enough variety to be a real key:
// at least one digit or mixed case, and entropy above 3 bits per character.
func keyBody(s string) bool {
	return !isPlaceholder(s) && ShannonEntropy(s) > 3 && (hasDigit(s) || hasUpper(s) && hasLower(s))
}

func hasDigit(s string) bool { return strings.IndexAny(s, "0123456789") >= 0 }
func hasUpper(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return r >= 'A' && r <= 'Z' }) >= 0
}
func hasLower(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return r >= 'a' && r <= 'z' }) >= 0
}

var placeholderRe = regexp.MustCompile(`(?i)^(?:` +
	`[<\[{(].*|.*[>\]})]|` + // <token>, [secret], {{x}}, (redacted)
	`\$.*|%[a-z_]+%?|` + // $API_KEY, ${X}, $(cmd), %TOKEN%
	`.*\.\.\..*|.*….*|` + // sk-..., abc…
	`(?:x+|\*+|#+|-+|_+|\.+|0+|changeme|change_me|change-me|secret|password|passwd|pass|token|apikey|api[_-]?key|value|none|null|nil|true|false|undefined|empty|string|str|env|required|optional|default|hidden|masked|\*\*\*.*)` +
	`)$`)

// placeholderPrefixRe are the words a made-up value starts with (abc123,
// test-key, your_token_here, example-secret-1234): a placeholder unless
// what follows the word is itself a random key (randomTail).
var placeholderPrefixRe = regexp.MustCompile(`(?i)^(?:1234|abc|foo|bar|test|dummy|fake|sample|example|placeholder|redacted|your[_-]?|my[_-]?)`)

// sequencePrefixRe are the prefixes of a value typed in sequence (abc123,
// 1234abcd): a stand-in while short; at a key's length (keyLength or
// more) the value reads as a key whoever typed it, and a reader given it
// would use it as one.
var sequencePrefixRe = regexp.MustCompile(`(?i)^(?:1234|abc)`)

// keyLength is the length from which a value typed in sequence is a key.
const keyLength = 20

// randomTail reports a run that reads as a generated key: 16 characters or
// more, digits and both cases, varied enough (a made-up tail such as
// "-api-key-here" or "1234567890" is not).
func randomTail(t string) bool {
	return len(t) >= 16 && hasDigit(t) && hasUpper(t) && hasLower(t) && ShannonEntropy(t) > 3.5
}

// isPlaceholder reports a value that stands for a secret without being one.
func isPlaceholder(v string) bool {
	v = strings.Trim(v, `"'`+"`")
	if v == "" || placeholderRe.MatchString(v) {
		return true
	}
	if m := placeholderPrefixRe.FindStringIndex(v); m != nil && !randomTail(v[m[1]:]) &&
		(len(v) < keyLength || !sequencePrefixRe.MatchString(v)) {
		return true
	}
	// A value of one repeated character (xxxxxxxx, 00000000).
	return strings.Count(v, v[:1]) == len(v)
}

// assignmentValue is a secret-looking value of a password/secret/token
// assignment: not a placeholder, at least 6 characters, and not a plain
// lower-case word (a reference to a variable, a file or a setting).
func assignmentValue(v string) bool {
	if len(v) < 6 || isPlaceholder(v) {
		return false
	}
	// A path or a file name (./certs/key.pem, ~/.npmrc, token.json).
	lv := strings.ToLower(v)
	if strings.HasPrefix(v, "./") || strings.HasPrefix(v, "../") || strings.HasPrefix(v, "/") || strings.HasPrefix(v, "~") ||
		fileExtRe.MatchString(lv) {
		return false
	}
	// An identifier in code (os.Getenv, config.password, getToken()): a
	// call is a name followed by its parenthesis. A parenthesis inside a
	// random value (a generated key's punctuation) does not make it code.
	if callShape(v) || strings.HasPrefix(strings.ToLower(v), "os.") ||
		strings.HasPrefix(strings.ToLower(v), "process.env") || strings.HasPrefix(strings.ToLower(v), "env.") {
		return false
	}
	// Letters only (a word, a setting, a variable name): a secret only
	// when long, mixed-case and random-looking. A dotted name is a
	// reference in code (config.db.password, settings.SECRET_KEY).
	word := true
	for _, r := range v {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_' || r == '-' || r == '.') {
			word = false
			break
		}
	}
	if word && strings.Contains(v, ".") {
		return false
	}
	if word {
		return hasUpper(v) && hasLower(v) && (len(v) >= 16 && ShannonEntropy(v) > 3.5 || len(v) >= 8 && !identifierCase(v))
	}
	return true
}

// callShape reports a value that starts as a call in code: "$(" (a shell
// substitution) or a name then "(": a name starts with a letter, _ or $,
// holds letters, digits, _ . $ :, and reads as a name — qualified
// (os.getenv, Secrets::get) or cased like an identifier (getToken) — not
// as the random start of a generated key (Xk9L(mQ…).
func callShape(v string) bool {
	i := strings.IndexByte(v, '(')
	if i <= 0 {
		return false
	}
	name := v[:i]
	if name == "$" {
		return true
	}
	if c := name[0]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '$') {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '$' || r == ':') {
			return false
		}
	}
	return strings.ContainsAny(name, ".:") || identifierCase(name)
}

// identifierCase reports letters cased like an identifier or words
// (passwordInput, SecretKeyRef, getAPIKey, CorrectHorse): every run of
// capitals starts the string or is followed by 2 lower-case letters or
// more, or ends it. Random mixed case (tDdLuIEybEGd) is not.
func identifierCase(v string) bool {
	for i := 0; i < len(v); {
		if v[i] < 'A' || v[i] > 'Z' {
			i++
			continue
		}
		j := i
		for j < len(v) && v[j] >= 'A' && v[j] <= 'Z' {
			j++
		}
		k := j
		for k < len(v) && v[k] >= 'a' && v[k] <= 'z' {
			k++
		}
		if k-j == 1 {
			return false
		}
		i = k
	}
	return true
}

var fileExtRe = regexp.MustCompile(`\.(?:pem|key|crt|cer|p12|pfx|json|ya?ml|toml|txt|env|ini|cfg|conf|properties|xml|gpg|asc)$`)

// urlPassword is the password part of user:password@host: anything but a
// placeholder (a short literal like "pass" is still a credential).
func urlPassword(v string) bool {
	return !isPlaceholderURL(v)
}

func isPlaceholderURL(v string) bool {
	if v == "" {
		return true
	}
	switch v[0] {
	case '<', '$', '{', '[', '%', '*':
		return true
	}
	return strings.Count(v, v[:1]) == len(v) && (v[0] == 'x' || v[0] == 'X' || v[0] == '*' || v[0] == '.')
}

// assignSep is what joins a credential's name to its value: =, :=, =>, :
// (quotes allowed), "is", "set to", or a space before a quoted value.
const assignSep = `(?:\s*(?:=|:=|=>|:)\s*["']?|\s+(?:is|was|are|were|is set to|set to|of)\s+["']?|\s+["'])`

func loreRules() []secretRule {
	rule := func(id, pat string, check func(string) bool, keywords ...string) secretRule {
		return secretRule{id: id, re: regexp.MustCompile(pat), keywords: keywords, check: check, need: deriveChain(pat)}
	}
	// A public key is no secret: named so (public_key, pubkey,
	// publishable_key) or in an SSH public key's format.
	public := []allowlist{{target: "match", regexes: []*regexp.Regexp{
		regexp.MustCompile(`(?i)pub(?:lic)?[_-]?key|publishable|(?:^|[\s"'=:])(?:ssh-(?:rsa|ed25519|dss)|ecdsa-sha2-nistp\d+|sk-ssh-ed25519@openssh\.com)\b`)}}}
	withAllow := func(r secretRule, a []allowlist) secretRule { r.allow = a; return r }
	return []secretRule{
		// PEM private keys, with or without their END line (a lesson may
		// be cut): the header and the base64 body that follows.
		rule("private-key", `-----BEGIN[ A-Z0-9_-]*PRIVATE KEY(?: BLOCK)?-----(?:[\s\\nA-Za-z0-9+/=:,-]*?-----END[ A-Z0-9_-]*PRIVATE KEY(?: BLOCK)?-----|[\s\\nA-Za-z0-9+/=]*)`,
			nil, "private key"),
		rule("putty-private-key", `PuTTY-User-Key-File-\d+:[^\n]*(?:\n[^\n]*){0,20}`, nil, "putty-user-key-file"),
		// Anthropic before OpenAI: both start with sk-.
		rule("anthropic-api-key", `\b(sk-ant-[a-z0-9]{2,10}-[A-Za-z0-9_-]{16,})`, keyBody, "sk-ant-"),
		rule("openai-api-key", `\b(sk-(?:proj-|svcacct-|admin-|live-|None-)?[A-Za-z0-9_-]{16,})`, keyBody, "sk-"),
		rule("aws-access-key", `\b((?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{12,16})\b`,
			keyBody, // AWS's documentation keys (…EXAMPLE) included: key-shaped text is redacted
			"a3t", "akia", "asia", "abia", "acca", "agpa", "aida", "aroa", "aipa", "anpa", "anva", "apka"),
		// An AWS secret access key: 40 base64 characters near "aws" or
		// "secret" words.
		rule("aws-secret-key", `(?i)(?:\b|_)(?:aws|secret|sk)[\w.-]{0,30}["']?\s*(?:=|:|=>|:=)?\s*["']?([A-Za-z0-9/+]{40})\b`,
			// Base64 with both cases: a 40-digit hex value is a commit id.
			func(s string) bool { return keyBody(s) && hasUpper(s) && hasLower(s) }, "aws", "secret"),
		rule("github-token", `\b((?:gh[pousr]_[A-Za-z0-9]{20,})|(?:github_pat_[A-Za-z0-9_]{20,}))`, keyBody, "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
		rule("gitlab-token", `\b(gl(?:pat|dt|rt|ptt|ft|imt|agent|oas|soat|cbt)-[A-Za-z0-9_-]{16,})`, keyBody, "glpat-", "gldt-", "glrt-", "glptt-", "glft-", "glimt-", "glagent-", "gloas-", "glsoat-", "glcbt-"),
		rule("slack-token", `\b(xox[abposre]-[A-Za-z0-9-]{10,})`, keyBody, "xox"),
		rule("slack-webhook", `(https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{20,})`, nil, "hooks.slack.com"),
		rule("google-api-key", `\b(AIza[0-9A-Za-z_-]{30,})`, keyBody, "aiza"),
		rule("google-oauth-token", `\b(ya29\.[0-9A-Za-z_-]{20,})`, keyBody, "ya29."),
		// Secret and restricted keys; publishable keys (pk_) are public.
		rule("stripe-key", `\b((?:sk|rk)_(?:live|prod)_[A-Za-z0-9]{10,})`, keyBody, "_live_", "_prod_"),
		rule("stripe-webhook-secret", `\b(whsec_[A-Za-z0-9]{24,})`, keyBody, "whsec_"),
		rule("mailgun-api-key", `\b(key-[0-9a-z]{32})\b`, keyBody, "key-"),
		rule("npm-token", `\b(npm_[A-Za-z0-9]{30,})`, keyBody, "npm_"),
		rule("pypi-token", `\b(pypi-[A-Za-z0-9_-]{40,})`, keyBody, "pypi-"),
		rule("huggingface-token", `\b(hf_[A-Za-z0-9]{30,})`, keyBody, "hf_"),
		// AI providers whose keys carry a prefix: Groq, xAI, Replicate,
		// NVIDIA, Tavily.
		rule("groq-api-key", `\b(gsk_[A-Za-z0-9]{40,})`, keyBody, "gsk_"),
		rule("xai-api-key", `\b(xai-[A-Za-z0-9]{40,})`, keyBody, "xai-"),
		rule("replicate-api-token", `\b(r8_[A-Za-z0-9]{30,})`, keyBody, "r8_"),
		rule("nvidia-api-key", `\b(nvapi-[A-Za-z0-9_-]{40,})`, keyBody, "nvapi-"),
		rule("tavily-api-key", `\b(tvly-(?:dev-|prod-)?[A-Za-z0-9]{24,})`, keyBody, "tvly-"),
		rule("sendgrid-key", `\b(SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,})`, keyBody, "sg."),
		rule("twilio-key", `\b((?:SK|AC)[0-9a-f]{32})\b`, keyBody, "sk", "ac"),
		rule("digitalocean-token", `\b(do[opr]_v1_[a-f0-9]{64})`, nil, "dop_v1_", "doo_v1_", "dor_v1_"),
		rule("shopify-token", `\b(shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32})`, nil, "shpat_", "shpca_", "shppa_", "shpss_"),
		rule("jwt", `\b(eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})`, nil, "eyj"),
		// Credentials inside a URL: scheme://user:password@host. The
		// password is redacted; the user and host stay.
		// The user may be empty (redis://:password@host); a scheme may
		// hold _ (oracle+cx_oracle://).
		rule("url-credentials", `(?i)\b[a-z][a-z0-9+._-]{1,30}://[^\s:/@"'<>]*:([^\s/@"'<>]+)@[^\s/@"'<>]`, urlPassword, "://"),
		// A token as the user part of a URL (https://<token>@host,
		// Sentry DSNs, https://ghp_…@github.com).
		rule("url-token", `(?i)\b[a-z][a-z0-9+.-]{1,20}://([A-Za-z0-9_-]{20,})@[^\s/@"'<>]`, keyBody, "://"),
		// password=…, passphrase: "…", DB_PASS is …: any value but a
		// placeholder (a weak password is still a password).
		// The name may end a longer one (PGPASSWORD, MYSQL_ROOT_PASSWORD).
		rule("password-assignment", `(?i)(?:(?:\b|_)(?:pass(?:word|wd|phrase)?|pwd)|\B(?:password|passwd|passphrase))["']?`+assignSep+`([^\s"'<>,;]{4,})`,
			assignmentValue, "pass", "pwd"),
		// the password for the staging DB is …: what it opens named
		// between the name and its value
		rule("password-assignment", `(?i)(?:\b|_)(?:password|passwd|passphrase)s? (?:for|of|to|on) (?:the |our |my |your |this )?(?:[a-z0-9_.-]+ ){0,2}?[a-z0-9_.-]+\s+(?:is|was|=|:)\s+["']?([^\s"'<>,;]{4,})`,
			assignmentValue, "pass"),
		// On a command line: --password X, mysql -pX, docker login -p X,
		// ConvertTo-SecureString 'X' -AsPlainText.
		rule("password-assignment", `(?i)(?:^|\s)--?(?:password|passwd|pass)(?:=|\s+)["']?([^\s"'<>,;]{4,})`, assignmentValue, "pass"),
		// "password Tq8#Lm2x!Vz9": the value after its name and a space,
		// when it reads as a generated one (digits, both cases or a symbol).
		rule("password-assignment", `(?i)(?:\b|_)(?:password|passwd|passphrase)\s+([^\s"'<>,;]{8,})`,
			func(v string) bool {
				return hasDigit(v) && (hasUpper(v) && hasLower(v) || strings.ContainsAny(v, "!#$%&*+?@^~")) &&
					ShannonEntropy(v) > 3 && assignmentValue(v)
			}, "pass"),
		rule("password-assignment", `\b(?i:mysql|mysqldump|mysqladmin|mysqlimport|mysqlsh|mariadb|mariadb-dump)\b[^\n|;&]*?\s-p([^\s"'<>;|&]{4,})`,
			assignmentValue, "mysql", "mariadb"),
		rule("password-assignment", `\b(?i:login)\b[^\n|;&]*?\s-p(?:=|\s+)["']?([^\s"'<>,;]{4,})`, assignmentValue, "login"),
		rule("password-assignment", `\b(?i:sshpass)\b[^\n|;&]*?\s-p\s*["']?([^\s"'<>;|&]{4,})`, assignmentValue, "sshpass"),
		rule("password-assignment", `(?i)\bconvertto-securestring\s+(?:-string\s+)?["']([^"'\n]{4,})["']`, assignmentValue, "convertto-securestring"),
		// secret: "…", API_KEY=…, client_secret=…, signing-key: …: a
		// random-looking value (more than 3 bits of entropy per character).
		withAllow(rule("secret-assignment", `(?i)(?:\b|_)(?:secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|client[_-]?secret|auth|credentials?|bearer|[a-z0-9]+[_-]?(?:key|token|secret))["']?`+assignSep+`([^\s"'<>,;]{4,})`,
			func(v string) bool { return len(v) >= 8 && ShannonEntropy(v) > 3 && assignmentValue(v) },
			"secret", "token", "key", "auth", "credential", "bearer"), public),
		// A credential name, a space and a long random value ("heroku
		// token 3f9a1c2e-…"): 16 characters or more, digits, entropy.
		withAllow(rule("secret-assignment", `(?i)(?:\b|_)(?:secret|token|api[ _-]?key|apikey|access[ _-]?key|private[_-]?key|client[ _-]?secret|credentials?|[a-z0-9]+[_-]?(?:key|token|secret))\s+([A-Za-z0-9_.+/=-]{16,})`,
			func(v string) bool { return hasDigit(v) && ShannonEntropy(v) > 3.3 && assignmentValue(v) },
			"secret", "token", "key", "credential"), public),
		// HTTP authorization headers.
		rule("authorization-header", `(?i)\bauthorization\s*:\s*(?:bearer|basic|token)\s+([A-Za-z0-9._~+/=-]{8,})`, keyBody, "authorization"),
	}
}
