package api_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pb33f/libopenapi"
	"github.com/pb33f/libopenapi-validator/schema_validation"

	"github.com/bindery-nas/bindery/internal/testutil"
)

// TestOpenAPIValid validates docs/openapi.yaml against the OpenAPI 3.1
// schema itself: a YAML slip that still parses (an unquoted comma in a flow
// mapping makes a stray key) is an error here.
func TestOpenAPIValid(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "docs", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := libopenapi.NewDocument(raw)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if v := doc.GetSpecInfo().Version; v != "3.1.0" {
		t.Fatalf("openapi %q, want 3.1.0", v)
	}
	ok, problems := schema_validation.ValidateOpenAPIDocument(doc)
	for _, p := range problems {
		t.Errorf("%s: %s", p.Message, p.Reason)
		for _, se := range p.SchemaValidationErrors {
			t.Errorf("  at %s (line %d): %s", se.FieldPath, se.Line, se.Reason)
		}
	}
	if !ok && len(problems) == 0 {
		t.Fatal("invalid, without a reason")
	}
	if _, errs := doc.BuildV3Model(); errs != nil {
		t.Fatalf("model: %v", errs)
	}
}
