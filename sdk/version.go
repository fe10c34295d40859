package sdk

// SDKVersion is this SDK's semantic version, the version of the Go module
// github.com/ibsm/ibsm/sdk (a release is tagged sdk/v<SDKVersion>). Every plugin
// built against it reports it on the wire (GetInfo), so the host can record
// it in the lock file and list it. Minor versions add API and capabilities
// and keep older plugins working; a new major plugin protocol
// (ProtocolVersion) is a new major SDK version.
//
// 0.3.0: the SDK is its own module; public building blocks (route, cdg,
// config, testfab), the host's plan checks (analysis, check) and the logger
// handed out by Serve.
//
// 0.4.0: CapTablesUnread (a VL assigner that declares it is given no
// realised tables; plan.UsedPlanes and cdg.BuildPlanes build its graph from
// the planes instead).
//
// 0.5.0: CapOneVL (a VL assigner whose every plan is plan.OneVL(); the
// host checks that plan while the assigner works); check.Delta (a one-VL
// plan checked by its changes since the last one accepted) and the
// cdg.Counts it keeps.
//
// 0.6.0: a route call answers only the destinations changed since the
// answer the host holds (RouteRequest.Since; plan.Routes Token, Base and
// Changed, set by the SDK, never by engines; plan.RealizeChanged,
// DestPlanes.Hash, DestHashes); the host takes a CapOneVL assigner's plan
// without asking it once its own check of plan.OneVL() passes.
//
// 0.7.0: a kind call's topology goes as a patch of the last one the plugin
// accepted (FeatureTopologyPatch, offered by the SDK's server; Info's
// sdk_features on the wire); plugins need do nothing. CapStablePlanes (a
// routing engine that never writes to planes it returned: the SDK hashes
// only the destinations whose planes are new to find an answer's changes).
//
// 0.8.0: a route call that asks for them (RouteRequest.Edits) gets a
// CapStablePlanes engine's changes as the entries that changed
// (plan.Routes.Edits, plan.Edit; set by the SDK, never by engines);
// plan.RealizeChanged takes them and says which rows it wrote
// (Realized.ChangedRows); plan.HashDests; sdktest.ApplyChanges.
const SDKVersion = "0.8.0"
