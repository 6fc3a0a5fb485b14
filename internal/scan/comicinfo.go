package scan

import (
	"github.com/bindery-nas/bindery/internal/comicinfo"
	"github.com/bindery-nas/bindery/internal/layout"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/protocol"
)

// parseComicInfo turns ComicInfo.xml into a metadata row and the series
// name it gives ("" when none). Parsing (limits, encodings, hostile input)
// is the comicinfo package's.
func parseComicInfo(data []byte) (model.FileMetadata, string, error) {
	ci, err := comicinfo.Parse(data)
	if err != nil {
		return model.FileMetadata{}, "", err
	}
	m := model.FileMetadata{
		Source:      string(protocol.MetaComicInfo),
		Series:      nullStr(layout.CleanName(ci.Series)),
		Number:      nullStr(ci.Number),
		Volume:      nullInt(ci.Volume),
		Title:       nullStr(ci.Title),
		Year:        nullInt(ci.Year),
		Month:       nullInt(ci.Month),
		Publisher:   nullStr(layout.CleanName(ci.Publisher)),
		Genre:       nullStr(ci.Genre),
		Tags:        nullStr(ci.Tags),
		AgeRating:   nullStr(ci.AgeRating),
		LanguageISO: nullStr(ci.LanguageISO),
		Writer:      nullStr(ci.Writer),
		Penciller:   nullStr(ci.Penciller),
		Summary:     nullStr(ci.Summary),
		Web:         nullStr(ci.Web),
		Manga:       nullStr(ci.Manga),
		SeriesCount: nullInt(ci.Count),
	}
	if ci.FrontCoverPage >= 0 {
		page := int64(ci.FrontCoverPage)
		m.FrontCoverPage = &page
	}
	return m, model.Deref(m.Series), nil
}
