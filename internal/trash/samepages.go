package trash

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path"

	"github.com/bindery-nas/bindery/internal/hashing"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/hashes"
	"github.com/bindery-nas/bindery/protocol"
)

// Same-book plans (issue 38). A same_pages plan's copy is not the
// keeper's bytes but the keeper's pages in another container. verify
// proves each file still holds the bytes the plan saw, as for a byte plan
// (size, mtime, its own full digest, from one open file); then both books
// are decompressed again from those open files, with the hash job's own
// page order and page digest (hashing.PageDigests), and the copy goes
// only when its ordered page digests equal the keeper's, every page
// (non-page entries aside). Stored digests are never trusted for this:
// they chose the group, the disk decides. The open file must be unchanged
// by the read (same ident), or the check says nothing.

// samePages reports whether the run's plan resolves same_pages groups.
func (r *run) samePages() bool { return r.plan.GroupKind == protocol.PlanSamePages }

// readPages digests the pages of f from its verified open file h, whose
// ident was id; the verdict says why they cannot be compared.
func readPages(ctx context.Context, h *os.File, id ident, f model.PlanFile) ([]hashes.PageDigest, *verdict) {
	pages, err := hashing.PageDigests(h, f.SizeBytes, path.Base(f.RelativePath))
	switch now, ok := fstatIdent(h); {
	case ctx.Err() != nil:
		return nil, &verdict{protocol.OutcomeIOError, ctx.Err().Error()}
	case !ok || now != id:
		return nil, &verdict{protocol.OutcomeChanged, "it changed while its pages were read"}
	case err != nil:
		return nil, &verdict{protocol.OutcomeLastCopy, "its pages could not be read again: " + err.Error()}
	case len(pages) == 0:
		return nil, &verdict{protocol.OutcomeLastCopy, "it has no pages"}
	}
	return pages, nil
}

// pagesDiffer is "" when copy's ordered page digests are keeper's, else
// where they part.
func pagesDiffer(copy, keeper []hashes.PageDigest) string {
	for i := range min(len(copy), len(keeper)) {
		if copy[i].Size != keeper[i].Size || !bytes.Equal(copy[i].Digest, keeper[i].Digest) {
			return fmt.Sprintf("page %d is not its keeper's", i+1)
		}
	}
	if len(copy) != len(keeper) {
		return fmt.Sprintf("it has %d pages, its keeper %d", len(copy), len(keeper))
	}
	return ""
}

// keeperPages reads the keeper's pages when the plan is same_pages; a
// verdict makes every copy of the group stay.
func (r *run) keeperPages(ctx context.Context, h *os.File, kid ident, keeper model.PlanFile) ([]hashes.PageDigest, *verdict) {
	if !r.samePages() {
		return nil, nil
	}
	return readPages(ctx, h, kid, keeper)
}

// copyPagesHold is nil when a same_pages copy, verified and open as h,
// holds its keeper's pages now (always nil in a byte plan); else its
// outcome: last_copy when its pages are not, or cannot be shown to be,
// the keeper's (the keeper may not hold what it holds), changed_since_plan
// when it changed as they were read.
func (r *run) copyPagesHold(ctx context.Context, h *os.File, id ident, f model.PlanFile, kpages []hashes.PageDigest) *verdict {
	if !r.samePages() {
		return nil
	}
	pages, v := readPages(ctx, h, id, f)
	if v != nil {
		return v
	}
	if msg := pagesDiffer(pages, kpages); msg != "" {
		return &verdict{protocol.OutcomeLastCopy, "its pages are not its keeper's, read again now: " + msg}
	}
	return nil
}
