// The one errno type and EINTR policy live below this module (MeshErrno, which the store uses
// too); everything that imports MeshLink sees them as before.
@_exported import MeshErrno
