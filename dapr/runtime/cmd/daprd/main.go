// Command daprd is Dapr 1.18.3's sidecar with only the components Troupe
// uses compiled in. Upstream registers components from build-tagged files
// (-tags stablecomponents pulls in every component, some of whose modules
// the module proxy does not serve); this main registers exactly Troupe's
// set before handing over to upstream's app.Run. dapr/build.sh blanks
// upstream's cmd/daprd/components/zz_notag.go, which panics without tags.
package main

import (
	redispubsub "github.com/dapr/components-contrib/pubsub/redis"
	redisstate "github.com/dapr/components-contrib/state/redis"
	"github.com/dapr/dapr/cmd/daprd/app"
	pubsubLoader "github.com/dapr/dapr/pkg/components/pubsub"
	stateLoader "github.com/dapr/dapr/pkg/components/state"
)

func main() {
	// state.redis: actor state store (actorStateStore: "true") and KV state.
	stateLoader.DefaultRegistry.RegisterComponent(redisstate.NewRedisStateStore, "redis")
	// pubsub.redis: Redis Streams pub/sub.
	pubsubLoader.DefaultRegistry.RegisterComponent(redispubsub.NewRedisStreams, "redis")
	app.Run()
}
