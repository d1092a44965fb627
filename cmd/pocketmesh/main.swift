print("pocketmesh")
