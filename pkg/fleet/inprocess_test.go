package fleet

import "github.com/ds-telemetry/ds/pkg/natsd"

// The package's tests run nats-server in the test process (natsd.Start)
// rather than as ds-natsd, which they would have to build; the helper's
// protocol is tested in pkg/natsd and by cmd/ds's testscripts.
func init() {
	startServer = func(o ServerOptions) (*Server, error) {
		var log func(string)
		if o.Log != nil {
			log = func(l string) {
				if isProblem(l) {
					o.Log(l)
				}
			}
		}
		s, err := natsd.Start(natsd.Options{Listen: o.Listen, StoreDir: o.StoreDir, Name: o.Name, Token: o.Token, Log: log, SyncAlways: o.SyncAlways})
		if err != nil {
			return nil, err
		}
		return &Server{url: s.ClientURL(), shutdown: s.Shutdown}, nil
	}
}
