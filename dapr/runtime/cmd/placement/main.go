// Command placement is Dapr 1.18.3's actor placement service, unchanged.
package main

import "github.com/dapr/dapr/cmd/placement/app"

func main() {
	app.Run()
}
