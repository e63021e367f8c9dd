"""What the KIP-848 consumer groups and the KIP-932 share groups share (Kafka's ``modern``
package): the group epoch, members with member epochs, the target assignment and its epoch
(``ModernGroup``, ``ModernGroupMember``), the member states of reconciliation
(``MemberState``) and the ``TargetAssignmentBuilder`` that runs a server-side assignor."""
