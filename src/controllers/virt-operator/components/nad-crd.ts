/**
 * The NetworkAttachmentDefinition CRD (k8s.cni.cncf.io/v1, the Network Plumbing Working
 * Group's, as Multus's deployment installs it): secondary networks' CNI configurations.
 * Installed with kubevirt-ts's own CRDs so `multus` networks can be declared on a cluster
 * without Multus's manifest; the same definition Multus applies, so either may come first.
 */
import type { KubeObject } from '../../runtime/types';

/** The CRD object. */
export function networkAttachmentDefinitionCrd(): KubeObject {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'network-attachment-definitions.k8s.cni.cncf.io' },
    spec: {
      group: 'k8s.cni.cncf.io',
      scope: 'Namespaced',
      names: {
        plural: 'network-attachment-definitions',
        singular: 'network-attachment-definition',
        kind: 'NetworkAttachmentDefinition',
        shortNames: ['net-attach-def'],
      },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: {
              description:
                'NetworkAttachmentDefinition is a CRD schema specified by the Network Plumbing Working Group to express the intent for attaching pods to one or more logical or physical networks. More information available at: https://github.com/k8snetworkplumbingwg/multi-net-spec',
              type: 'object',
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec: {
                  description:
                    'NetworkAttachmentDefinition spec defines the desired state of a network attachment',
                  type: 'object',
                  properties: {
                    config: {
                      description: 'NetworkAttachmentDefinition config is a JSON-formatted CNI configuration',
                      type: 'string',
                    },
                  },
                },
              },
            },
          },
        },
      ],
    },
  };
}
