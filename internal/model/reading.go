package model

import "github.com/bindery-nas/bindery/protocol"

// User is a reader account. PasswordHash is the PHC string of its
// argon2id hash; the API never shows it.
type User struct {
	ID           int64
	Name         string
	PasswordHash string
	Disabled     bool
	CreatedAt    protocol.Time
	UpdatedAt    protocol.Time
}

// APIKey is one API key of a user; only the SHA-256 of the key is stored.
type APIKey struct {
	ID         int64
	UserID     int64
	Name       string
	CreatedAt  protocol.Time
	LastUsedAt *protocol.Time
}

// Progress is a row of reading_progress: how far a user read one book.
type Progress struct {
	FileID    int64
	Page      int64
	Completed bool
	UpdatedAt *protocol.Time
}

// Book is a file with its reader's progress (Page 0: never opened).
type Book struct {
	File
	Page         int64
	Completed    bool
	ReadAt       *protocol.Time
	LibraryTitle string
	// Title is the ComicInfo title, when the file has one.
	Title *string
}
