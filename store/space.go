package store

// Space is how the data file's pages are used: a B+tree file never
// shrinks by itself, it reuses free pages.
type Space struct {
	// FileSize is the file's size as the newest transaction sees it
	// (pages up to the high-water mark).
	FileSize int64
	// PageSize is the size of one page in bytes.
	PageSize int
	// FreePages counts pages inside FileSize that hold no data (free, or
	// freed by a transaction that readers may still see).
	FreePages int
	// PagesWritten counts the page writes of the commits since the file
	// was opened (a record that spans several pages is one write, each
	// commit's meta page another); the difference between two readings
	// is what the commits between them wrote: the cost of a write that
	// the disk's speed does not change.
	PagesWritten int64
}

// InUse returns the bytes of the file's pages that hold data.
func (s Space) InUse() int64 { return s.FileSize - int64(s.FreePages)*int64(s.PageSize) }
