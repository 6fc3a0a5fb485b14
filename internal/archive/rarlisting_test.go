package archive

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/nwaples/rardecode/v2"

	"github.com/bindery-nas/bindery/internal/testutil"
	"github.com/bindery-nas/bindery/protocol"
)

// rar5TestBlock builds one RAR5 block: CRC32, size, then the header fields.
func rar5TestBlock(fields ...[]byte) []byte {
	content := bytes.Join(fields, nil)
	sized := append(rar5TestVint(uint64(len(content))), content...)
	out := binary.LittleEndian.AppendUint32(nil, crc32.ChecksumIEEE(sized))
	return append(out, sized...)
}

func rar5TestVint(v uint64) []byte {
	var out []byte
	for v >= 0x80 {
		out = append(out, byte(v)|0x80)
		v >>= 7
	}
	return append(out, byte(v))
}

// rar5TestStored is a RAR5 archive of stored files, each given by name and
// content; extra is the extra area of every file header.
func rar5TestStored(extra []byte, files ...string) []byte {
	v := rar5TestVint
	out := append([]byte(nil), magicRar5...)
	out = append(out, rar5TestBlock(v(1), v(0), v(0))...) // main header
	for i := 0; i < len(files); i += 2 {
		name, data := files[i], []byte(files[i+1])
		flags := uint64(rar5HasData)
		head := [][]byte{v(rar5TypeFile), nil}
		if len(extra) > 0 {
			flags |= rar5HasExtra
			head = append(head, v(uint64(len(extra))))
		}
		head[1] = v(flags)
		head = append(head, v(uint64(len(data))), v(rar5FileCRC), v(uint64(len(data))), v(0x20),
			binary.LittleEndian.AppendUint32(nil, crc32.ChecksumIEEE(data)), v(0), v(0), v(uint64(len(name))), []byte(name), extra)
		out = append(out, rar5TestBlock(head...)...)
		out = append(out, data...)
	}
	return append(out, rar5TestBlock(v(rar5TypeEnd), v(0), v(0))...)
}

// rar5TestCrypt is a file encryption extra record: version, flags, KDF
// count, salt and IV (libarchive's only_crypt_exfld has the same shape).
var rar5TestCrypt = append([]byte{36, rar5FileEncryption, 0, 0, 6}, make([]byte, 32)...)

func TestRar5ListingReadsHeaders(t *testing.T) {
	t.Parallel()
	b := rar5TestStored(nil, "001.jpg", "one", "notes.txt", "two words")
	entries, err := rar5Listing(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[0].name != "001.jpg" || entries[1].size != 9 || !entries[1].hasCRC ||
		entries[1].crc != crc32.ChecksumIEEE([]byte("two words")) {
		t.Fatalf("entries %+v", entries)
	}
	if got := rarCRCs(bytes.NewReader(b), int64(len(b))); len(got) != 2 || got[0].crc != crc32.ChecksumIEEE([]byte("one")) {
		t.Fatalf("rarCRCs over the same walk: %+v", got)
	}
}

func TestRar5ListingVerdicts(t *testing.T) {
	t.Parallel()
	sound := rar5TestStored(nil, "001.jpg", "one")
	badCRC := bytes.Clone(sound)
	badCRC[len(magicRar5)] ^= 0xff
	zeroSize := bytes.Clone(sound)
	zeroSize[len(magicRar5)+4] = 0
	cases := []struct {
		name, code, msg string
		data            []byte
	}{
		{"encrypted entry", protocol.ErrArchiveEncrypted, `entry "001.jpg" is encrypted`, rar5TestStored(rar5TestCrypt, "001.jpg", "one")},
		{"header CRC", protocol.ErrArchiveCorrupt, "header CRC mismatch", badCRC},
		{"zero header size", protocol.ErrArchiveCorrupt, "bad header size", zeroSize},
		{"truncated data", protocol.ErrArchiveCorrupt, "runs past the end", sound[:len(sound)-9]},
		{"no end block", protocol.ErrArchiveCorrupt, "no end-of-archive block", sound[:len(sound)-8]},
		{"magic only", protocol.ErrArchiveCorrupt, "no end-of-archive block", sound[:len(magicRar5)]},
	}
	for _, c := range cases {
		_, err := rar5Listing(bytes.NewReader(c.data), int64(len(c.data)))
		if protocol.CodeOf(err, "") != c.code || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v, want %s %q", c.name, err, c.code, c.msg)
		}
	}
}

// TestRarByHeadersListsWhatRardecodeRefuses: the fallback listing stands
// on the walk; the page is still decoded by rardecode.
func TestRarByHeadersListsWhatRardecodeRefuses(t *testing.T) {
	t.Parallel()
	b := rar5TestStored(nil, "001.jpg", "one", "002.png", "two")
	refused := codedf(protocol.ErrArchiveCorrupt, "list rar: refused")
	opts := []rardecode.Option{rardecode.FileSystem(oneFileFS{r: bytes.NewReader(b), size: int64(len(b))})}
	a, err := openRarByHeaders(rarName, opts, bytes.NewReader(b), int64(len(b)), refused)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	pages := a.Pages()
	if len(pages) != 2 || pages[1].Name != "002.png" || pages[1].Size != 3 {
		t.Fatalf("pages %+v", pages)
	}
	if data, err := a.ReadEntry(pages[1], 1<<20); err != nil || string(data) != "two" {
		t.Fatalf("page 2 through rardecode: %q, %v", data, err)
	}
	if _, err := openRarByHeaders(rarName, nil, bytes.NewReader(b[:20]), 20, refused); err != refused {
		t.Fatalf("a walk that fails keeps rardecode's error, got %v", err)
	}
}

// TestRar5OnlyCryptRecord: libarchive's file whose only extra record is a
// file encryption record rardecode refuses; bsdtar and lsar list it as
// one encrypted entry.
func TestRar5OnlyCryptRecord(t *testing.T) {
	t.Parallel()
	p := testutil.SharedFixture(t, "libarchive", "test_read_format_rar5_only_crypt_exfld.rar")
	_, err := Open(p)
	if protocol.CodeOf(err, "") != protocol.ErrArchiveEncrypted || !strings.Contains(err.Error(), "file.txt") {
		t.Fatalf("got %v, want archive_encrypted naming file.txt", err)
	}
}
