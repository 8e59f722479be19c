package safety

// The embedded gitleaks rule set comes from this module version; to
// refresh it, change the version and run `go generate ./safety`.
//go:generate sh -c "go mod download github.com/zricethezav/gitleaks/v8@v8.30.1 && cp \"$(go env GOMODCACHE)/github.com/zricethezav/gitleaks/v8@v8.30.1/config/gitleaks.toml\" rules/gitleaks.toml && chmod 644 rules/gitleaks.toml"
