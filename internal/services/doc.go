// Package services is the node's view of the cluster's Services, for the
// service environment variables of containers: Watcher keeps every Service
// that has a cluster IP through one informer (upstream's service lister),
// and EnvFor and FromServices turn them into a container's variables
// (upstream's getServiceEnvVarMap and envvars.FromServices), as pure
// functions of the Services they are given.
package services
