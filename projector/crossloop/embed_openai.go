package crossloop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
)

// OpenAIEmbedder scores relevance with an OpenAI-compatible /v1/embeddings
// endpoint: the cosine of the query's and each document's embeddings,
// clipped to [0,1]. One request embeds the query and the documents.
type OpenAIEmbedder struct {
	// BaseURL is the server root ("http://127.0.0.1:8080"); "/v1/embeddings"
	// is appended unless it is already there.
	BaseURL string
	Model   string
	APIKey  string
	Client  *http.Client // nil: http.DefaultClient
}

var _ Embedder = (*OpenAIEmbedder)(nil)

type embedReq struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
}

type embedResp struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	} `json:"data"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// Relevance implements Embedder.
func (e *OpenAIEmbedder) Relevance(ctx context.Context, query string, docs []string) ([]float64, error) {
	vecs, err := e.Embed(ctx, append([]string{query}, docs...))
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(docs))
	for i := range docs {
		out[i] = math.Max(0, Cosine(vecs[0], vecs[i+1]))
	}
	return out, nil
}

// Embed returns one vector per input, in input order.
func (e *OpenAIEmbedder) Embed(ctx context.Context, inputs []string) ([][]float64, error) {
	body, err := json.Marshal(embedReq{Model: e.Model, Input: inputs})
	if err != nil {
		return nil, err
	}
	url := strings.TrimRight(e.BaseURL, "/")
	if !strings.HasSuffix(url, "/v1/embeddings") {
		url += "/v1/embeddings"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("embeddings request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if e.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+e.APIKey)
	}
	c := e.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("embeddings: read: %w", err)
	}
	var er embedResp
	if err := json.Unmarshal(raw, &er); err != nil && resp.StatusCode == http.StatusOK {
		return nil, fmt.Errorf("embeddings: decode: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		msg := strings.TrimSpace(string(raw))
		if er.Error != nil {
			msg = er.Error.Message
		}
		return nil, fmt.Errorf("embeddings: status %d: %s", resp.StatusCode, msg)
	}
	out := make([][]float64, len(inputs))
	for _, d := range er.Data {
		if d.Index < 0 || d.Index >= len(out) {
			return nil, fmt.Errorf("embeddings: index %d out of range", d.Index)
		}
		out[d.Index] = d.Embedding
	}
	for i, v := range out {
		if v == nil {
			return nil, fmt.Errorf("embeddings: no vector for input %d", i)
		}
	}
	return out, nil
}

// Cosine similarity of two vectors (0 when either is zero or lengths differ).
func Cosine(a, b []float64) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		dot += a[i] * b[i]
		na += a[i] * a[i]
		nb += b[i] * b[i]
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / (math.Sqrt(na) * math.Sqrt(nb))
}
