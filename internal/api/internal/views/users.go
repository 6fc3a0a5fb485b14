package views

import (
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/protocol"
)

// UserJSON is a reader account, as the admin lists it and /me shows it.
type UserJSON struct {
	ID         int64         `json:"id"`
	Name       string        `json:"name"`
	Disabled   bool          `json:"disabled"`
	LibraryIDs []int64       `json:"library_ids,omitempty"`
	CreatedAt  protocol.Time `json:"created_at"`
	UpdatedAt  protocol.Time `json:"updated_at"`
}

func User(u model.User) UserJSON {
	return UserJSON{ID: u.ID, Name: u.Name, Disabled: u.Disabled, CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt}
}
