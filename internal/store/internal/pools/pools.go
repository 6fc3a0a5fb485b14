// Package pools hands a Store's connection pools to the store's test
// helpers (storetest) without a method on the product type: package store
// sets Of when it loads, and Go's internal rule keeps every package outside
// internal/store from importing this one.
package pools

import "github.com/jmoiron/sqlx"

// Of returns the writer and reader pools of st, a *store.Store.
var Of func(st any) (w, r *sqlx.DB)
