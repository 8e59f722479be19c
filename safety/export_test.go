package safety

// SecretsUnfiltered is Secrets without the rules' derived prefilters: the
// reference their exactness is tested against.
func SecretsUnfiltered(text string) []Finding { return secrets(text, false) }

// RuleKeywords are the keywords of every rule (lower case).
func RuleKeywords() []string {
	loaded.once.Do(loadRules)
	var out []string
	for _, r := range loaded.rules {
		out = append(out, r.keywords...)
	}
	return out
}
