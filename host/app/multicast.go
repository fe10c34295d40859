package app

import (
	"context"
	"fmt"

	"github.com/ibsm/ibsm/conf"
	"github.com/ibsm/ibsm/host/mcast"
)

// setMulticast launches the configured multicast router and gives it to
// the SM with the group store (kept across reloads), creating the IPoIB
// broadcast groups of the partitions marked IPoIB. Without a router the
// SM does no multicast and says so once.
func (a *App) setMulticast(ctx context.Context, cfg *conf.Config) error {
	p := cfg.MulticastRouter()
	if p == nil {
		a.Log.Warn(`no multicast router: declare plugin "multicast_router" "mcast-spanning" { path = ".../mcast-spanning" }; until then MCMemberRecord joins are refused (ERR_NO_RESOURCES) and IPoIB cannot come up`)
		return nil
	}
	lock, err := a.checkLock(cfg)
	if err != nil {
		return err
	}
	pl, _, err := a.launch(ctx, p, lock)
	if err != nil {
		return err
	}
	router, err := pl.MulticastRouter()
	if err != nil {
		return err
	}
	store := a.SM.MulticastStore()
	if store == nil {
		store = mcast.NewStore(0)
	}
	a.groupsOK = a.restoreGroups(a.saved, store)
	if _, err := store.Ensure(mcast.IPoIBGroups(cfg.Partitions)); err != nil {
		return fmt.Errorf("creating the IPoIB broadcast groups: %w", err)
	}
	a.SM.EnableMulticast(router, store)
	return nil
}
