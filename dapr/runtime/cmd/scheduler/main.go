// Command scheduler is Dapr 1.18.3's scheduler service (reminders, jobs;
// embedded etcd), unchanged.
package main

import "github.com/dapr/dapr/cmd/scheduler/app"

func main() {
	app.Run()
}
