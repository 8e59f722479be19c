package swarmtools

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"

	// modernc.org/sqlite: a maintained SQLite in pure Go (no cgo, no
	// sqlite3 binary to shell out to), reading libSQL's file format.
	_ "modernc.org/sqlite"
)

// ErrNoDatabase is returned by ReadDB when the file does not exist or is
// not an SQLite database.
var ErrNoDatabase = errors.New("lore: not a swarm-tools database")

// DBRead is what ReadDB read: the rows, and the rows it could not read.
type DBRead struct {
	Rows Rows
	// Bad are rows whose columns have the wrong types, with the reason.
	Bad []Note
	// Missing names the tables the database lacks (events, memories).
	Missing []string
}

// ReadDB reads swarm-tools' database at path, read-only: the events of
// EventTypes in id order and every memory in id order. A table that does
// not exist is listed in Missing; a row whose columns have the wrong types
// is listed in Bad, named by its id.
func ReadDB(ctx context.Context, path string) (DBRead, error) {
	var out DBRead
	if st, err := os.Stat(path); err != nil {
		return out, fmt.Errorf("%w: %v", ErrNoDatabase, err)
	} else if st.IsDir() {
		return out, fmt.Errorf("%w: %s is a directory", ErrNoDatabase, path)
	}
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?mode=ro")
	if err != nil {
		return out, fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	cols := func(table string) (map[string]bool, error) {
		rs, err := db.QueryContext(ctx, "SELECT name FROM pragma_table_info(?)", table)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrNoDatabase, path, err)
		}
		defer rs.Close()
		m := map[string]bool{}
		for rs.Next() {
			var n string
			if err := rs.Scan(&n); err != nil {
				return nil, fmt.Errorf("read %s columns: %w", table, err)
			}
			m[n] = true
		}
		return m, rs.Err()
	}
	ec, err := cols("events")
	if err != nil {
		return out, err
	}
	if len(ec) == 0 {
		out.Missing = append(out.Missing, "events")
	} else if err := readEvents(ctx, db, ec, &out); err != nil {
		return out, err
	}
	mc, err := cols("memories")
	if err != nil {
		return out, err
	}
	if len(mc) == 0 {
		out.Missing = append(out.Missing, "memories")
	} else if err := readMemories(ctx, db, mc, &out); err != nil {
		return out, err
	}
	return out, nil
}

func readEvents(ctx context.Context, db *sql.DB, have map[string]bool, out *DBRead) error {
	for _, c := range []string{"id", "type", "project_key", "timestamp", "data"} {
		if !have[c] {
			return fmt.Errorf("%w: table events has no column %s", ErrNoDatabase, c)
		}
	}
	q := "SELECT id, type, project_key, timestamp, data FROM events WHERE type IN (" +
		strings.TrimSuffix(strings.Repeat("?,", len(EventTypes)), ",") + ") ORDER BY id"
	args := make([]any, len(EventTypes))
	for i, t := range EventTypes {
		args[i] = t
	}
	rs, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("read events: %w", err)
	}
	defer rs.Close()
	for rs.Next() {
		var id, typ, pk, ts, data any
		if err := rs.Scan(&id, &typ, &pk, &ts, &data); err != nil {
			return fmt.Errorf("read events: %w", err)
		}
		rid, ok := asInt(id)
		if !ok {
			out.Bad = append(out.Bad, Note{Ref: fmt.Sprintf("events#%v", id), Reason: "column id: not an integer"})
			continue
		}
		ref := fmt.Sprintf("events#%d", rid)
		t, ok := asInt(ts)
		if !ok {
			out.Bad = append(out.Bad, Note{Ref: ref, Reason: fmt.Sprintf("column timestamp: %v: not Unix milliseconds", ts)})
			continue
		}
		d := asText(data)
		if !json.Valid([]byte(d)) {
			out.Bad = append(out.Bad, Note{Ref: ref, Reason: "column data: not JSON"})
			continue
		}
		out.Rows.Events = append(out.Rows.Events, EventRow{ID: rid, Type: asText(typ), ProjectKey: asText(pk), Timestamp: t, Data: json.RawMessage(d)})
	}
	return rs.Err()
}

// memoryColumns are the memories columns ReadDB reads when present (older
// databases lack some).
var memoryColumns = []string{"id", "content", "metadata", "tags", "decay_factor", "category", "status", "superseded_by", "collection", "created_at"}

func readMemories(ctx context.Context, db *sql.DB, have map[string]bool, out *DBRead) error {
	for _, c := range []string{"id", "content"} {
		if !have[c] {
			return fmt.Errorf("%w: table memories has no column %s", ErrNoDatabase, c)
		}
	}
	sel := make([]string, len(memoryColumns))
	for i, c := range memoryColumns {
		sel[i] = "NULL"
		if have[c] {
			sel[i] = c
		}
	}
	rs, err := db.QueryContext(ctx, "SELECT "+strings.Join(sel, ", ")+" FROM memories ORDER BY id")
	if err != nil {
		return fmt.Errorf("read memories: %w", err)
	}
	defer rs.Close()
	for rs.Next() {
		v := make([]any, len(memoryColumns))
		ptrs := make([]any, len(v))
		for i := range v {
			ptrs[i] = &v[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			return fmt.Errorf("read memories: %w", err)
		}
		m := MemoryRow{Origin: OriginDB, ID: asText(v[0]), Content: asText(v[1]), Metadata: asText(v[2]),
			Category: asText(v[5]), Status: asText(v[6]), SupersededBy: asText(v[7]), Collection: asText(v[8]), CreatedAt: asText(v[9])}
		if tags := strings.TrimSpace(asText(v[3])); tags != "" {
			var list []string
			if err := json.Unmarshal([]byte(tags), &list); err != nil {
				list = SplitTags(tags) // tags written as text, not a JSON array
			}
			m.Tags = list
		}
		if v[4] != nil {
			f, ok := asFloat(v[4])
			if !ok {
				out.Bad = append(out.Bad, Note{Ref: m.Ref(), Reason: fmt.Sprintf("column decay_factor: %v: not a number", v[4])})
				continue
			}
			m.DecayFactor = &f
		}
		out.Rows.Memories = append(out.Rows.Memories, m)
	}
	return rs.Err()
}

func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case float64:
		if x == float64(int64(x)) {
			return int64(x), true
		}
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		return n, err == nil
	case []byte:
		return asInt(string(x))
	}
	return 0, false
}

func asFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil
	case []byte:
		return asFloat(string(x))
	}
	return 0, false
}

func asText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []byte:
		return string(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}
