# Tests of the distributed partitioner (partition/dist.cmake).
