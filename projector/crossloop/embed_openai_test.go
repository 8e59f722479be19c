package crossloop_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/loredev/lore/projector/crossloop"
)

func TestOpenAIEmbedder(t *testing.T) {
	var gotAuth, gotModel string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/embeddings" {
			http.NotFound(w, r)
			return
		}
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		gotAuth, gotModel = r.Header.Get("Authorization"), req.Model
		vec := map[string][]float64{"null check": {1, 0}, "add null check": {0.8, 0.6}, "write docs": {0, 1}}
		type item struct {
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		}
		var data []item
		for i := len(req.Input) - 1; i >= 0; i-- { // out of order on purpose
			data = append(data, item{i, vec[req.Input[i]]})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"data": data})
	}))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = l
	srv.Start()
	defer srv.Close()

	e := &crossloop.OpenAIEmbedder{BaseURL: srv.URL, Model: "m1", APIKey: "k"}
	rel, err := e.Relevance(context.Background(), "null check", []string{"add null check", "write docs"})
	if err != nil {
		t.Fatal(err)
	}
	if rel[0] != 0.8 || rel[1] != 0 {
		t.Errorf("relevance = %v, want [0.8 0]", rel)
	}
	if gotAuth != "Bearer k" || gotModel != "m1" {
		t.Errorf("auth %q model %q", gotAuth, gotModel)
	}
	bad := &crossloop.OpenAIEmbedder{BaseURL: srv.URL + "/nope"}
	if _, err := bad.Relevance(context.Background(), "x", []string{"y"}); err == nil {
		t.Error("want an error from a 404")
	}
}
