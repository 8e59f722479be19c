package safety

import "testing"

// TestTechnicalTextHasNoSecret: hashes, ids, references to secrets and
// settings named like credentials are not credentials.
func TestTechnicalTextHasNoSecret(t *testing.T) {
	for _, s := range []string{
		"The commit sha is 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39, revert to it",
		"Cache key = sha256(lockfile) keeps the cache stable",
		"Use api_version=2024-06-01 for the Azure OpenAI client",
		"The secret rotation job sets secret_name=prod-db-password",
		"Set NODE_AUTH_TOKEN=${{ secrets.NPM_TOKEN }} in the publish step",
		"password_hash = bcrypt.hash(pw, 12) in the user service",
		"The key id is kid=2024-rotation-01 in the JWKS",
		"Use the token bucket with capacity=100 and refill_rate=10",
		"Set auth_mode=oidc and token_ttl=3600 in the gateway config",
		"Redis key pattern user:{id}:session keeps lookups O(1)",
		"Sort keys with key=lambda x: x[1] in the report script",
		"The API returns {\"token_type\": \"Bearer\", \"expires_in\": 3600}",
		"Use secretKeyRef in the pod spec to mount db-credentials",
		"Set --password-stdin when piping the registry token to docker login",
		"The signing key fingerprint is SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8",
		"Connection string Server=db;Database=app;Trusted_Connection=True works on Windows",
		"ULIDs like 01HZX3K4M5N6P7Q8R9S0T1V2W3 sort by time",
		"UUID 550e8400-e29b-41d4-a716-446655440000 is the tenant id in fixtures",
		"git checkout 9fceb02 restores the last good build",
		"task_id: 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39 is the failing run",
		"The secret scanner flagged commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39 as clean",
		"Base64 of 'hello' is aGVsbG8=, handy in tests",
		"Use passlib with pbkdf2_sha256 for password hashing",
		"access_log=/var/log/nginx/access.log in the server block",
		"Set the access token lifetime to 15m and refresh tokens to 7d",
		"The secret is to run migrations before seeding",
		"In Go use crypto/rand, not math/rand, for tokens",
		"Set apiKey: process.env.API_KEY in the client constructor",
		"Authorization: Bearer <token> is the header format",
		"token=abc is too short to be a real secret in the test fixture",
		"Pin the image digest sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945",
		"Set GOFLAGS=-mod=mod and GOPRIVATE=github.com/acme/* for private modules",
	} {
		if f := Secrets(s); len(f) > 0 {
			t.Errorf("%q → %v %q", s, f, s[f[0].Start:f[0].End])
		}
	}
}
