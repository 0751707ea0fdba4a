// Package operatorrun is what hub/operator and klusterlet/operator share to follow one of OCM's
// operator API objects (operator.open-cluster-management.io/v1 ClusterManager or Klusterlet)
// in-process, without an operator of their own:
//
//   - Watch follows the object, and the process's own Deployment, from a cache of just those
//     two objects, outside any manager so that every replica sees a change, leader or not.
//   - Runner runs a component (the hub, the klusterlet's agents) with the settings the object
//     asks for, stops and starts it again when those change, and starts it again after a
//     backoff when it fails.
//   - ApplyStatus, DeploymentStatus, FeatureGates and Repeat are the parts of writing the
//     object's status that do not depend on its kind.
//
// What each kind takes from its object, how its component starts and which conditions it
// reports stay with hub/operator and klusterlet/operator.
package operatorrun
