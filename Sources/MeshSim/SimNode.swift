import MeshNode

/// The simulator's nodes are MeshNode's nodes on the simulated air.
public typealias SimNode = Node
