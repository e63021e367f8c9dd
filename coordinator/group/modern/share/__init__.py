"""KIP-932 share groups: ``ShareGroup``, ``ShareGroupMember`` and ``ShareGroupManager`` (the
``shareGroup*`` half of Kafka's ``GroupMetadataManager``)."""
